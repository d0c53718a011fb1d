"""The ``result`` record: one collective measurement of `collscope bench` (or of an imported
nccl-tests / rccl-tests log). Field names and units are public interface (records.run)."""

from __future__ import annotations

from typing import Any, ClassVar

from collscope.records.base import Record


class BenchResult(Record, tag="result"):
    """One collective x dtype x op x size x placement measurement.

    ``time_us`` is the mean time per operation over the timed loop (as nccl-tests prints it);
    the percentiles are over per-iteration times. Across ranks each is combined by
    ``average`` (rank0, mean, min or max). ``wrong`` is the number of mismatched elements summed
    over ranks, or None where the placement cannot be verified (nccl-tests prints N/A).
    """

    collective: str
    size_bytes: int
    count: int
    dtype: str
    op: str
    root: int
    in_place: bool
    world_size: int
    iters: int
    time_us: float
    time_us_p50: float | None    # None where unknown (imported nccl-tests logs)
    time_us_p95: float | None
    time_us_min: float | None
    time_us_max: float | None
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None
    algo: str = "flat"
    average: str = "mean"
    max_error: float | None = None
    # Rank 0's records only (None elsewhere and in imports): per rank, its last <= -n
    # per-iteration times (nccl-tests' per-process times) and its own time inside each op
    # (launch to completion, which shows a late rank), microseconds; see bench/per_rank.py.
    rank_times_us: list[list[float]] | None = None
    rank_op_us: list[list[float]] | None = None
    # Relative half-width of the 95% CI of the median per-iteration time (max over ranks;
    # None below 6 iterations or for imported logs), and whether an adaptive run's time
    # budget ended before --target-precision was reached.
    ci_halfwidth: float | None = None
    budget_exhausted: bool = False

    kind_before: ClassVar[str | None] = "ci_halfwidth"
    joins: ClassVar[str | None] = "results"
    # A result needs only what matching and charts rely on (collective, size_bytes, dtype,
    # in_place, time_us, busbw_gbs): hand-made files and tune's medians leave the rest out.
    read_defaults: ClassVar[dict[str, Any]] = {
        "count": 0, "op": "none", "root": -1, "world_size": 0, "iters": 0,
        "time_us_p50": None, "time_us_p95": None, "time_us_min": None, "time_us_max": None,
        "algbw_gbs": 0.0, "wrong": None, "algo": "flat"}
