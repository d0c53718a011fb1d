"""`collscope bench` configuration: one typed dataclass, validated on construction.

Pure (no torch): the CLI validates it before spawning any rank, so bad input exits 2 at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.collectives.dtypes import DTYPES, OPS, canonical_dtype
from collscope.collectives.table import COLLECTIVES, canonical_name
from collscope.errors import UsageError

AVERAGE_MODES = {0: "rank0", 1: "mean", 2: "min", 3: "max"}
ALGOS = ("flat", "hierarchical")
# Default sweep: both the latency- and the bandwidth-bound regime. GPUs go further, to where
# busbw saturates; the runner caps it by free device memory.
DEFAULT_MAX_BYTES_CPU = 64 * 1024**2
DEFAULT_MAX_BYTES_GPU = 4 * 1024**3


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class BenchConfig:
    collectives: list[str] = field(default_factory=lambda: ["all_reduce"], metadata=_help(
        "collectives to run, or 'all'"))
    min_bytes: int = field(default=8, metadata=_help("smallest message size"))
    max_bytes: int | None = field(default=None, metadata=_help(
        "largest message size (default 64M on CPU, 4G on GPU capped by free memory)"))
    step_factor: int = field(default=2, metadata=_help("multiply the size by this each step"))
    step_bytes: int | None = field(default=None, metadata=_help(
        "add this many bytes each step instead of multiplying"))
    iters: int = field(default=20, metadata=_help("timed iterations per size"))
    warmup_iters: int = field(default=5, metadata=_help("untimed iterations before each size"))
    dtypes: list[str] = field(default_factory=lambda: ["float"], metadata=_help(
        "data types, or 'all'"))
    ops: list[str] = field(default_factory=lambda: ["sum"], metadata=_help(
        "reduction ops, or 'all'"))
    root: int = field(default=0, metadata=_help("root rank of broadcast and reduce"))
    check: int = field(default=1, metadata=_help("verify results after timing (0 disables)"))
    blocking: bool = field(default=False, metadata=_help(
        "wait for each operation to finish before launching the next (GPU)"))
    average: int = field(default=1, metadata=_help(
        "combine per-rank times: 0 rank 0, 1 mean, 2 min, 3 max"))
    in_place: bool = True
    out_of_place: bool = True
    target_precision: float | None = field(default=None, metadata=_help(
        "adaptive: iterate until the 95%% CI of the median is within +-P"))
    time_budget_s: float = field(default=2.0, metadata=_help(
        "adaptive: seconds per size before giving up on the precision target"))
    algo: str = field(default="flat", metadata=_help(
        "all_reduce algorithm: flat (the backend's) or hierarchical (collscope.hooks)"))
    ranks_per_node: int | None = field(default=None, metadata=_help(
        "ranks per node for --algo hierarchical (default: from the launcher)"))
    backend: str = "auto"
    timeout_s: float = field(default=300.0, metadata=_help(
        "seconds any collective may wait before every rank exits"))

    def __post_init__(self) -> None:
        self.collectives = _expand(self.collectives, list(COLLECTIVES), canonical_name,
                                   "COLLECTIVE", "collective")
        self.dtypes = _expand(self.dtypes, list(DTYPES), canonical_dtype, "-d/--dtype", "dtype")
        self.ops = _expand(self.ops, list(OPS), lambda o: o if o in OPS else None,
                           "-o/--op", "op")
        _positive(self.min_bytes, "-b/--min-bytes", allow_zero=True)
        if self.max_bytes is not None:
            _positive(self.max_bytes, "-e/--max-bytes")
            if self.min_bytes > self.max_bytes:
                raise UsageError(f"-b/--min-bytes: {self.min_bytes} is larger than "
                                 f"-e/--max-bytes {self.max_bytes}")
        if self.step_bytes is not None:
            _positive(self.step_bytes, "-i/--step-bytes")
        elif self.step_factor < 2:
            raise UsageError(f"-f/--step-factor: {self.step_factor} must be an integer >= 2 "
                             "(use -i/--step-bytes for linear steps)")
        _positive(self.iters, "-n/--iters")
        _positive(self.warmup_iters, "-w/--warmup-iters", allow_zero=True)
        _positive(self.root, "-r/--root", allow_zero=True)
        _positive(self.check, "-c/--check", allow_zero=True)
        if self.average not in AVERAGE_MODES:
            raise UsageError(f"-a/--average: {self.average} is not accepted; use 0 (rank 0), "
                             "1 (mean), 2 (min) or 3 (max)")
        if not (self.in_place or self.out_of_place):
            raise UsageError("--in-place/--out-of-place: at least one placement must be run")
        if self.target_precision is not None and not self.target_precision > 0:
            raise UsageError(f"--target-precision: {self.target_precision} must be a relative "
                             "half-width > 0, e.g. 0.02 for +-2%")
        if self.time_budget_s <= 0:
            raise UsageError(f"--time-budget: {self.time_budget_s} must be > 0 seconds")
        if self.timeout_s <= 0:
            raise UsageError(f"--timeout: {self.timeout_s} must be > 0 seconds")
        if self.algo not in ALGOS:
            raise UsageError(f"--algo: '{self.algo}' is not accepted; use {', '.join(ALGOS)}")
        if self.algo == "hierarchical" and self.collectives != ["all_reduce"]:
            raise UsageError("--algo: hierarchical applies to all_reduce only; run the other "
                             "collectives without it")
        if self.ranks_per_node is not None:
            _positive(self.ranks_per_node, "--ranks-per-node")
        if not self.in_place and all(not COLLECTIVES[c].out_of_place for c in self.collectives):
            raise UsageError(
                f"--out-of-place: {', '.join(self.collectives)} exist only in place in "
                "torch.distributed; use --in-place")

    @property
    def average_name(self) -> str:
        return AVERAGE_MODES[self.average]

    def sizes(self, max_bytes: int) -> list[int]:
        """Requested sizes of the sweep, nccl-tests' stepping: x factor, or + step bytes."""
        sizes, size = [], self.min_bytes
        while size <= max_bytes:
            sizes.append(size)
            size = size + self.step_bytes if self.step_bytes else max(size * self.step_factor, 1)
        return sizes

    def validate_for_job(self, world_size: int, backend: str) -> None:
        """Checks that need the job: root within the world, ops the backend can do."""
        if "sendrecv" in self.collectives and world_size < 2:
            raise UsageError("COLLECTIVE: sendrecv needs at least 2 ranks")
        if self.ranks_per_node is not None and world_size % self.ranks_per_node:
            raise UsageError(f"--ranks-per-node: {self.ranks_per_node} does not divide the "
                             f"world size {world_size}; use a divisor of it")
        if self.root >= world_size:
            raise UsageError(f"-r/--root: {self.root} is not a rank of this {world_size}-rank "
                             f"job; use 0..{world_size - 1}")
        if backend == "gloo" and "avg" in self.ops:
            integer = [d for d in self.dtypes if not DTYPES[d].floating]
            if integer and any(COLLECTIVES[c].reduces for c in self.collectives):
                raise UsageError(f"-o/--op: avg on gloo needs a floating dtype; "
                                 f"{', '.join(integer)} cannot be averaged there")


def _expand(values: list[str], everything: list[str], canonical, flag: str,
            what: str) -> list[str]:
    if any(v.strip().lower() == "all" for v in values):
        return list(everything)
    result = []
    for value in values:
        name = canonical(value)
        if name is None:
            raise UsageError(f"{flag}: unknown {what} '{value}'; accepted: "
                             f"{', '.join(everything)}, all")
        if name not in result:
            result.append(name)
    return result


def _positive(value: int | float, flag: str, allow_zero: bool = False) -> None:
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{flag}: {value} must be {'>= 0' if allow_zero else '> 0'}")
