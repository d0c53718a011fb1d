"""The records of `collscope train` (``train``: one per measured configuration) and of
`collscope overlap` (``overlap``).

Units are in the names (``_ms`` milliseconds, ``_bytes`` bytes, ``_per_s`` per second); the
timing method travels in ``timing``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from collscope.records.base import Record


class TrainRecord(Record, tag="train"):
    label: str                          # short name of the configuration, as in the table
    config: dict[str, Any]              # model, dtype, parallelism, DDP knobs, world, steps
    world_size: int
    steps: int                          # timed steps (each with and without gradient sync)
    step_time_ms: float                 # median synchronised step: forward+backward+optimizer
    step_time_ms_p25: float
    step_time_ms_p75: float
    step_time_ms_min: float
    step_time_ms_max: float
    step_time_ms_nosync: float          # median step without gradient sync, same batches
    step_time_ms_nosync_p25: float
    step_time_ms_nosync_p75: float
    forward_ms: float                   # medians of the synchronised steps' phases
    backward_ms: float
    backward_ms_nosync: float
    optimizer_ms: float
    exposed_comm_ms: float              # median of per-pair (sync - no-sync) (not clamped)
    exposed_comm_ms_iqr: float          # spread of the per-step (sync - no-sync) differences
    comm_scope: str                     # what the communication figures cover
    comm_collective: str                # all_reduce (DDP) or reduce_scatter (FSDP)
    comm_algo: str                      # flat or hierarchical
    comm_bytes_per_step: int            # bytes each rank hands the collectives, in wire dtype
    comm_messages_per_step: int
    pure_comm_ms: float                 # the same messages alone on the same group (bench p50)
    overlap_fraction: float | None      # 1 - exposed / pure, clamped to [0, 1]
    overlap_clamped: bool               # the raw value was outside [0, 1]
    tokens_per_s: float                 # all ranks' tokens per median synchronised step
    peak_memory_bytes: int              # max over ranks
    memory_method: str
    loss_first: float                   # mean over ranks, first step (initial weights)
    loss_last: float                    # mean over ranks, last synchronised timed step
    speedup_vs_ddp_default: float | None = None  # DDP default's step time / this one's
    is_ddp_default: bool = False
    timing: str = ""
    extra: dict[str, Any] = {}
    # Distribution-free CI of exposed_comm_ms (order statistics of the per-pair differences)
    # and its exact coverage (0.95 or more when there are >= 6 steps).
    exposed_comm_ms_ci_low: float | None = None
    exposed_comm_ms_ci_high: float | None = None
    exposed_comm_ci_confidence: float | None = None
    # Memory pre-flight: the per-rank estimate made before building the model, beside the
    # measured peak_memory_bytes.
    estimated_memory_bytes: int | None = None

    kind_before: ClassVar[str | None] = "exposed_comm_ms_ci_low"
    joins: ClassVar[str | None] = "train"


class OverlapResult(Record, tag="overlap"):
    """`collscope overlap`: a matmul alone, an all_reduce alone and both at once, per size."""

    matmul_dim: int
    matmul_flops: float
    matmul_dtype: str
    size_bytes: int
    comm_dtype: str
    world_size: int
    iters: int
    t_compute_ms: float           # medians over iterations of the slowest rank's time
    t_comm_ms: float
    t_both_ms: float
    t_compute_ms_iqr: float
    t_comm_ms_iqr: float
    t_both_ms_iqr: float
    overlap_efficiency: float | None
    compute_tflops: float         # matmul alone
    timing: str

    joins: ClassVar[str | None] = "overlap"
