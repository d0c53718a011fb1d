"""The records of `collscope trace`: ``trace_collective``, ``trace_step`` and ``trace_rank``
(its findings are ``finding`` records, records.finding)."""

from __future__ import annotations

from typing import ClassVar

from collscope.records.base import Record


class TraceCollectiveRecord(Record, tag="trace_collective"):
    """`collscope trace`: one (collective, dtype, size, process group) of one rank's trace.

    ``kernel_us_*`` are over the GPU kernels of the calls (or their CPU spans where ``timing``
    says "cpu spans"); ``busbw_gbs`` uses the p50 time and nccl-tests' factor for
    ``group_size``. ``efficiency`` = busbw / the baseline's busbw at the same size and rank
    count (None without a matching baseline; ``baseline`` says which or why not).
    """

    rank: int
    collective: str
    dtype: str | None
    size_bytes: int | None
    group: str
    group_size: int | None
    calls: int
    calls_per_step: float | None
    kernel_us_p50: float
    kernel_us_p95: float
    kernel_ms_total: float
    algbw_gbs: float | None
    busbw_gbs: float | None
    step_share_percent: float | None
    algorithm: str | None = None
    protocol: str | None = None
    timing: str = "gpu kernels"
    baseline_busbw_gbs: float | None = None
    efficiency: float | None = None
    saving_ms_per_step: float | None = None
    baseline: str = ""

    joins: ClassVar[str | None] = "trace"


class TraceStepRecord(Record, tag="trace_step"):
    """`collscope trace`: one ProfilerStep of one rank (-1: the whole trace, no steps)."""

    rank: int
    step: int
    step_ms: float
    compute_ms: float
    comm_ms: float
    exposed_comm_ms: float
    overlap_percent: float | None
    idle_ms: float

    joins: ClassVar[str | None] = "trace"


class TraceRankRecord(Record, tag="trace_rank"):
    """`collscope trace`: one rank over the analysed window (``window`` says which)."""

    rank: int
    path: str
    timing: str
    window: str
    comm_kernel_ms: float
    compute_kernel_ms: float
    exposed_comm_ms: float
    overlap_percent: float | None     # HolisticTraceAnalysis' get_comm_comp_overlap definition
    late_calls: int
    wait_caused_ms: float
    calls: int
    late_by_call: list[float] = []  # ms after the earliest, per call
    late_steps: int = 0               # steps whose most-delayed call waited on it (the trials)
    # Its clock vs the reference rank's (method, drift rule, t0: the run record's
    # clock_alignment): offset (CI), residual spread, calls, drift ppm (CI), applied; None: not.
    clock_offset_us: float | None = None
    clock_offset_ci_us: list[float] = []
    clock_spread_us: float | None = None
    clock_calls: int = 0
    clock_drift_ppm: float | None = None
    clock_drift_ci_ppm: list[float] = []
    clock_drift_applied: bool = False

    joins: ClassVar[str | None] = "trace"
