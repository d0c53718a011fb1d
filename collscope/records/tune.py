"""The records of `collscope tune`: ``tune_trial`` (one bench job) and ``tune`` (one
configuration at one size, judged against the defaults)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from collscope.records.base import Record

TrialStatus = Literal["ok", "failed"]
# A configuration at one size against the defaults; "failed": the whole configuration failed.
TuneVerdict = Literal["baseline", "faster", "slower", "within noise", "too few rounds", "failed"]


class TuneTrialRecord(Record, tag="tune_trial"):
    """One trial of a `collscope tune` sweep: one bench job of one configuration.

    ``config`` maps each space variable to its value (None: unset); ``status`` is ok or failed
    (with ``reason``); ``results`` holds bench's per-size mean time per operation.
    """

    index: int
    stage: int
    round: int
    position: int                 # place in its round (the order rotates each round)
    config: dict[str, str | None]
    label: str                    # "defaults" or the variables that differ from them
    status: TrialStatus
    reason: str
    wall_s: float
    file: str | None              # the trial's bench JSON Lines (None: not kept)
    results: list[dict[str, Any]]  # collective, dtype, size_bytes, time_us

    summed_in: ClassVar[str | None] = "tune"


class TuneRecord(Record, tag="tune"):
    """One configuration of a tune sweep at one size, judged against the defaults.

    ``time_us`` is the median over its trials of bench's mean time per operation (in place);
    ``ratio`` the speed-up over the defaults (baseline time / its time, paired by round) with
    its interval ``ratio_ci_low``..``ratio_ci_high`` (method in ``ci_method``). ``verdict``:
    baseline, faster, slower, within noise, too few rounds, or failed (then only config, label
    and reason are set, for the whole configuration).
    """

    config: dict[str, str | None]
    label: str
    baseline: bool
    verdict: TuneVerdict
    winner: bool = False
    collective: str | None = None
    dtype: str | None = None
    in_place: bool = True
    size_bytes: int | None = None
    world_size: int | None = None
    trials: int = 0
    rounds: int = 0
    time_us: float | None = None
    algbw_gbs: float | None = None
    busbw_gbs: float | None = None
    ratio: float | None = None
    ratio_ci_low: float | None = None
    ratio_ci_high: float | None = None
    confidence: float | None = None          # the level of ratio_ci_low..ratio_ci_high
    family_confidence: float | None = None   # all ``comparisons`` intervals hold together
    comparisons: int | None = None           # m, the sweep's (configuration, size) comparisons
    correction: str = ""                     # how confidence follows from family_confidence
    ci_method: str = ""
    time_method: str = ""
    reason: str = ""

    joins: ClassVar[str | None] = "tune"
