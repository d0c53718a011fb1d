"""The versioned record schema shared by bench, train, monitor, report and import.

Every command that measures writes JSON Lines: one ``{"kind": "run", ...}`` record with the
context, then one record per measurement, each flushed as soon as it exists so that a crash
loses nothing already measured. Field names and units are public interface: change them only
together with ``SCHEMA_VERSION``.

Units are in the field names: ``_us`` microseconds, ``_gbs`` GB/s with GB = 1e9 bytes,
``_bytes`` bytes.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass, field, fields
from typing import Any

# Which names look secret and how values are hidden: collscope/redact.py (one list for all).
from collscope.redact import redact_argv, shown_env

SCHEMA_VERSION = 1

# Environment variables that shape collective performance; recorded in the run record.
RECORDED_ENV_PREFIXES = ("NCCL_", "RCCL_", "HSA_", "UCX_", "GLOO_", "TORCH_NCCL_", "HIP_", "ROCR_",
                         "CUDA_VISIBLE_DEVICES", "MIOPEN_")
def recorded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The communication-related environment variables, secrets left out."""
    environ = dict(os.environ) if environ is None else environ
    return shown_env({name: value for name, value in sorted(environ.items())
                      if name.startswith(RECORDED_ENV_PREFIXES)})


@dataclass
class RunRecord:
    """Context of one run: who measured what, where, with which software."""

    command: str                      # "bench", "train", "import", ...
    collscope_version: str
    argv: list[str]
    launcher: str                     # torchrun, slurm, openmpi, pmi, local, import
    backend: str                      # gloo, nccl, rccl, mpi, ucc
    world_size: int
    nodes: int
    ranks_per_node: int
    hosts: list[str]
    devices: list[dict[str, Any]]     # per rank: rank, host, node, local_rank, device, name
    versions: dict[str, str | None]   # torch, hip, cuda, nccl (or rccl), python, ...
    env: dict[str, str]
    timing: str = ""                  # how every time in this run was measured
    started_at: float = 0.0           # seconds since the epoch
    extra: dict[str, Any] = field(default_factory=dict)
    kind: str = "run"
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def create(cls, command: str, *, launcher: str, backend: str, world_size: int, nodes: int,
               ranks_per_node: int, hosts: list[str], devices: list[dict[str, Any]],
               timing: str, extra: dict[str, Any], versions: dict[str, str | None],
               started_at: float | None = None, env: dict[str, str] | None = None,
               argv: list[str] | None = None) -> RunRecord:
        """The one way to make a run record: collscope's version, the command line as typed,
        the recorded environment and the start time are filled in the same way for all
        (``env``/``argv`` given: a command that records another job's, e.g. trace: none)."""
        import time

        from collscope import __version__

        return cls(command=command, collscope_version=__version__,
                   argv=redact_argv(["collscope", *sys.argv[1:]] if argv is None else argv),
                   launcher=launcher, backend=backend,
                   world_size=world_size, nodes=nodes, ranks_per_node=ranks_per_node,
                   hosts=hosts, devices=devices, versions=versions,
                   env=recorded_env() if env is None else env,
                   timing=timing, started_at=time.time() if started_at is None else started_at,
                   extra=extra)

    @classmethod
    def for_session(cls, command: str, session: Any, launcher: str, timing: str,
                    extra: dict[str, Any], versions: dict[str, str | None] | None = None,
                    started_at: float | None = None) -> RunRecord:
        """The run record of a measuring command (bench, train, overlap, links) on its
        Session."""
        from collscope.versions import library_versions

        layout = session.layout
        return cls.create(command, launcher=launcher, backend=session.label,
                          world_size=session.world_size, nodes=layout.nodes,
                          ranks_per_node=layout.ranks_per_node, hosts=layout.hosts,
                          devices=layout.devices, timing=timing, extra=extra,
                          versions=library_versions() if versions is None else versions,
                          started_at=started_at)


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


@dataclass
class PredictionRecord:
    """One predicted collective x size x layout from `collscope model predict`.

    ``time_us`` is the cost model's time per operation, ``time_us_low``/``time_us_high`` its
    uncertainty band (``band_method`` says how it was formed); ``busbw_gbs`` is nccl-tests'
    convention (S / time x bus factor of ``world_size`` ranks). ``method`` names the formula and
    the fitted groups whose parameters it used.
    """

    collective: str
    size_bytes: int
    nodes: int
    ranks_per_node: int
    world_size: int
    algo: str                    # ring, tree or hierarchical
    time_us: float
    busbw_gbs: float
    time_us_low: float
    time_us_high: float
    algbw_gbs: float = 0.0
    extrapolated: bool = False   # the size lies outside the sizes a group it used was fitted on
    method: str = ""
    band_method: str = ""
    kind: str = "prediction"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TuneTrialRecord:
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
    status: str
    reason: str
    wall_s: float
    file: str | None              # the trial's bench JSON Lines (None: not kept)
    results: list[dict[str, Any]]  # collective, dtype, size_bytes, time_us
    kind: str = "tune_trial"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TuneRecord:
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
    verdict: str
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
    kind: str = "tune"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TraceCollectiveRecord:
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
    kind: str = "trace_collective"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TraceStepRecord:
    """`collscope trace`: one ProfilerStep of one rank (-1: the whole trace, no steps)."""

    rank: int
    step: int
    step_ms: float
    compute_ms: float
    comm_ms: float
    exposed_comm_ms: float
    overlap_percent: float | None
    idle_ms: float
    kind: str = "trace_step"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TraceRankRecord:
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
    late_by_call: list[float] = field(default_factory=list)  # ms after the earliest, per call
    late_steps: int = 0               # steps whose most-delayed call waited on it (the trials)
    # Its clock vs the reference rank's (method, drift rule, t0: the run record's
    # clock_alignment): offset (CI), residual spread, calls, drift ppm (CI), applied; None: not.
    clock_offset_us: float | None = None
    clock_offset_ci_us: list[float] = field(default_factory=list)
    clock_spread_us: float | None = None
    clock_calls: int = 0
    clock_drift_ppm: float | None = None
    clock_drift_ci_ppm: list[float] = field(default_factory=list)
    clock_drift_applied: bool = False
    kind: str = "trace_rank"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FindingRecord:
    """A problem found, with its fix, ranked by the step time at stake (ms per step)."""

    id: str
    level: str                        # info, warn
    title: str
    detail: str
    fix: str
    at_stake_ms: float
    rank: int | None = None
    test: str = ""                    # the statistical test or rule that made the decision
    kind: str = "finding"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)



@dataclass
class LinkRecord:
    """One direction of one pair's exchange in `collscope links` (receiver-side timing)."""

    src_host: str
    dst_host: str
    src_rank: int
    dst_rank: int
    src_device: str | None        # "cuda:3", "cpu"
    dst_device: str | None
    src_nic: str | None           # the interface the rank was pinned to, when known
    dst_nic: str | None
    scope: str                    # "inter" (across nodes) or "intra" (inside a node)
    link_type: str | None         # intra-node GPU pairs: xgmi, nvlink, pcie, ... (topology)
    size_bytes: int
    iters: int
    time_us: float                # median over iterations of the receive completion time
    gbs: float                    # size_bytes / time_us, GB/s = 1e9 B/s (sendrecv busbw)
    expected_gbs: float | None    # nominal per-direction bandwidth of link_type, if known
    verdict: str = "ok"           # ok | slow | node (a slow endpoint node explains it) |
                                  # gpu (a slow GPU explains it) | below-link-type
    round: int = 0
    src_node: int = 0
    dst_node: int = 0
    tries_gbs: list[float] = field(default_factory=list)   # each try (re-measured: gbs = best)
    kind: str = "link"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LinkTryRecord:
    """One measurement of one direction in `collscope links`, written as its round ends."""

    scope: str
    round: int
    attempt: int                  # 0: the first measurement; k: the k-th confirmation re-run
    src_rank: int
    dst_rank: int
    src_host: str
    dst_host: str
    size_bytes: int
    times_us: list[float]         # each timed iteration's receive completion time
    time_us: float                # their median
    gbs: float                    # size_bytes / time_us (1e9 B/s)
    stop: str = "all"             # all (-n iterations) | decided (early) | budget (--pair-budget)
    latency_us: float = 0.0       # the pair's small control exchange, least of this try's
    kind: str = "link_try"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LinksSummaryRecord:
    """The end of a `collscope links` run: thresholds, confirmations and the gate's verdict."""

    verdict: str                  # pass | fail
    slow_nodes: list[str]
    thresholds: list[dict[str, Any]]
    confirmations: list[dict[str, Any]]
    rounds: dict[str, int]        # rounds per scope, confirmations included
    seconds: float
    round_seconds: list[float] = field(default_factory=list)   # each round run, in order
    kind: str = "links_summary"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class NodeRecord:
    """One host in `collscope links`: its inter-node links summarised, and its verdict."""

    host: str
    node: int
    ranks: list[int]
    nics: list[str]
    median_gbs: float | None      # median over its inter-node links (None on one node)
    best_gbs: float | None        # its fastest inter-node link
    links: int
    verdict: str = "ok"           # ok | slow (slow on all its links)
    slow_ranks: list[int] = field(default_factory=list)   # GPUs slow on all pairs (verdict gpu)
    kind: str = "node"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
