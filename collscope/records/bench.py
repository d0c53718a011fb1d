"""The ``result`` record: one collective measurement of `collscope bench` (or of an imported
nccl-tests / rccl-tests log). Field names and units are public interface (records.run)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class BenchResult:
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
    kind: str = "result"
    # Relative half-width of the 95% CI of the median per-iteration time (max over ranks;
    # None below 6 iterations or for imported logs), and whether an adaptive run's time
    # budget ended before --target-precision was reached.
    ci_halfwidth: float | None = None
    budget_exhausted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchResult:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
