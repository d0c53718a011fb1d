"""`collscope bench` configuration: one typed dataclass, validated on construction.

Pure (no torch): the CLI validates it before spawning any rank, so bad input exits 2 at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.collectives.dtypes import DTYPES, OPS, canonical_dtype
from collscope.collectives.table import COLLECTIVES, canonical_name
from collscope.config_flags import (  # train/config.py's list too: both declare a job's flags
    ConfigError,
    backend_flag,
    check_choice,
    flag,
    hier_chunk_flag,
    invalid,
    json_flag,
    timeout_flag,
)
from collscope.errors import UsageError
from collscope.units import parse_size

AVERAGE_MODES = {0: "rank0", 1: "mean", 2: "min", 3: "max"}
ALGOS = ("flat", "hierarchical")
# Default sweep: both the latency- and the bandwidth-bound regime. GPUs go further, to where
# busbw saturates; the runner caps it by free device memory.
DEFAULT_MAX_BYTES_CPU = 64 * 1024**2
DEFAULT_MAX_BYTES_GPU = 4 * 1024**3


def _listed(text: str, _label: str) -> list[str]:
    return [item for item in text.split(",") if item]


@dataclass
class BenchConfig:
    collectives: list[str] = field(default_factory=lambda: ["all_reduce"])  # COLLECTIVE...
    min_bytes: int = flag(8, "-b", "--min-bytes", parse=parse_size, help="smallest size")
    max_bytes: int | None = flag(None, "-e", "--max-bytes", parse=parse_size,
                                 help="largest size (default 64M on CPU, 4G on GPU, capped by "
                                      "free memory)")
    step_factor: int = flag(2, "-f", "--step-factor", type=int,
                            help="multiply the size by this each step")
    step_bytes: int | None = flag(None, "-i", "--step-bytes", parse=parse_size,
                                  help="add this many bytes each step instead of multiplying")
    iters: int = flag(20, "-n", "--iters", type=int, help="timed iterations")
    warmup_iters: int = flag(5, "-w", "--warmup-iters", type=int,
                             help="warm-up iterations per size")
    dtypes: list[str] = flag(["float"], "-d", "--dtype", parse=_listed, shown="float",
                             help="float, half, bfloat16, double, int32, int64, int8, uint8 "
                                  "(comma-separated) or all")
    # -o was nccl-tests' spelling; in collscope -o is --output everywhere else, so here it is
    # an old spelling that still works.
    ops: list[str] = flag(["sum"], "--op", parse=_listed, shown="sum", deprecated=("-o",),
                          help="sum, prod, min, max, avg (comma-separated) or all")
    root: int = flag(0, "-r", "--root", type=int, show_default=False,
                     help="root of broadcast/reduce")
    check: int = flag(1, "-c", "--check", type=int,
                      help="verify results after timing; 0 disables")
    blocking: bool = flag(False, "-z", "--blocking", type=int, choices=(0, 1), to_field=bool,
                          show_default=False,
                          help="1: wait for each op before launching the next (GPU); each time "
                               "is that op's device time, between its own start and end events")
    average: int = flag(1, "-a", "--average", type=int,
                        help="combine rank times: " +
                             ", ".join(f"{k} {v}" for k, v in AVERAGE_MODES.items()))
    # One placement only (a mutually exclusive pair): --out-of-place turns in-place off,
    # --in-place turns out-of-place off.
    in_place: bool = flag(True, "--out-of-place", negate=True, help="only out-of-place")
    out_of_place: bool = flag(True, "--in-place", negate=True, help="only in-place")
    target_precision: float | None = flag(
        None, "--target-precision", type=float, metavar="P",
        help="adaptive iterations: stop a size when the 95% CI of its median is within +-P "
             "(e.g. 0.02) or its --time-budget ends")
    time_budget_s: float = flag(2.0, "--time-budget", type=float, metavar="S",
                                help="adaptive mode: seconds per size at most")
    algo: str = flag("flat", "--algo", show_default=False,
                     help="all_reduce algorithm: flat (the backend's) or hierarchical "
                          "(reduce-scatter in node, all-reduce across, all-gather in node)")
    ranks_per_node: int | None = flag(
        None, "--ranks-per-node", type=int, metavar="R",
        help="ranks per node for --algo hierarchical (default: from the launcher; set it to "
             "emulate nodes on one machine)")
    hier_chunk_bytes: int = hier_chunk_flag()
    backend: str = backend_flag()
    timeout_s: float = timeout_flag("a collective")

    def __post_init__(self) -> None:
        self.collectives = _expand(self, "collectives", list(COLLECTIVES), canonical_name,
                                   "collective")
        self.dtypes = _expand(self, "dtypes", list(DTYPES), canonical_dtype, "dtype")
        self.ops = _expand(self, "ops", list(OPS), lambda o: o if o in OPS else None, "op")
        _positive(self, "min_bytes", allow_zero=True)
        if self.max_bytes is not None:
            _positive(self, "max_bytes")
            if self.min_bytes > self.max_bytes:
                raise invalid(self, "min_bytes", f"{self.min_bytes} is larger than "
                                                 f"-e/--max-bytes {self.max_bytes}")
        if self.step_bytes is not None:
            _positive(self, "step_bytes")
        elif self.step_factor < 2:
            raise invalid(self, "step_factor", f"{self.step_factor} must be an integer >= 2 "
                                               "(use -i/--step-bytes for linear steps)")
        _positive(self, "iters")
        _positive(self, "warmup_iters", allow_zero=True)
        _positive(self, "root", allow_zero=True)
        _positive(self, "check", allow_zero=True)
        if self.average not in AVERAGE_MODES:
            raise invalid(self, "average", f"{self.average} is not accepted; use 0 (rank 0), "
                                           "1 (mean), 2 (min) or 3 (max)")
        if not (self.in_place or self.out_of_place):
            raise ConfigError("in_place", "at least one placement must be run",
                              "--in-place/--out-of-place")
        if self.target_precision is not None and not self.target_precision > 0:
            raise invalid(self, "target_precision", f"{self.target_precision} must be a "
                                                    "relative half-width > 0, e.g. 0.02 for +-2%")
        if self.time_budget_s <= 0:
            raise invalid(self, "time_budget_s", f"{self.time_budget_s} must be > 0 seconds")
        if self.timeout_s <= 0:
            raise invalid(self, "timeout_s", f"{self.timeout_s} must be > 0 seconds")
        check_choice(self, "algo", ALGOS)
        if self.algo == "hierarchical" and self.collectives != ["all_reduce"]:
            raise invalid(self, "algo", "hierarchical applies to all_reduce only; run the other "
                                        "collectives without it")
        if self.ranks_per_node is not None:
            _positive(self, "ranks_per_node")
        _positive(self, "hier_chunk_bytes")
        if not self.in_place and all(not COLLECTIVES[c].out_of_place for c in self.collectives):
            raise UsageError(
                f"--out-of-place: {', '.join(self.collectives)} exist only in place in "
                "torch.distributed; use --in-place")

    @property
    def average_name(self) -> str:
        return AVERAGE_MODES[self.average]

    def sizes(self, max_bytes: int) -> list[int]:
        """Requested sizes of the sweep, nccl-tests' stepping: x factor, or + step bytes."""
        return sweep_sizes(self.min_bytes, max_bytes, self.step_factor, self.step_bytes)

    def validate_for_job(self, world_size: int, backend: str) -> None:
        """Checks that need the job: root within the world, ops the backend can do."""
        if "sendrecv" in self.collectives and world_size < 2:
            raise UsageError("COLLECTIVE: sendrecv needs at least 2 ranks")
        if self.ranks_per_node is not None and world_size % self.ranks_per_node:
            raise invalid(self, "ranks_per_node", f"{self.ranks_per_node} does not divide the "
                                                  f"world size {world_size}; use a divisor of it")
        if self.root >= world_size:
            raise invalid(self, "root", f"{self.root} is not a rank of this {world_size}-rank "
                                        f"job; use 0..{world_size - 1}")
        if backend == "gloo" and "avg" in self.ops:
            integer = [d for d in self.dtypes if not DTYPES[d].floating]
            if integer and any(COLLECTIVES[c].reduces for c in self.collectives):
                others = ",".join(o for o in OPS if o != "avg")
                floating = ", ".join(d for d in DTYPES if DTYPES[d].floating)
                raise invalid(self, "ops", f"avg on gloo needs a floating dtype and "
                                           f"{', '.join(integer)} is not one; use --op {others} "
                                           f"with it, or avg with -d {floating} only")


@dataclass(frozen=True)
class BenchOutputs:
    """Where rank 0 writes besides stdout (None: not asked for); not part of the recorded
    configuration."""

    json: str | None = json_flag("write JSON Lines records (flushed per size)")
    csv: str | None = flag(None, "--csv", metavar="FILE", help="write one CSV row per result")
    per_rank: bool = flag(False, "--per-rank",
                          help="print per size the late rank (shortest own op time; binomial "
                               "and Wilcoxon tests) and the wait it causes, and name a rank "
                               "late in most sizes")
    nccl_json: str | None = flag(None, "--nccl-json", metavar="FILE",
                                 help="also write nccl-tests' -J JSON (file version 3, "
                                      "per-iteration blocks as with -I 1); never overwrites: "
                                      "FILE.0, FILE.1, ... as nccl-tests")


def sweep_sizes(min_bytes: int, max_bytes: int, factor: int,
                step_bytes: int | None = None) -> list[int]:
    """nccl-tests' size sweep from ``min_bytes`` to ``max_bytes``: x ``factor`` each step, or
    + ``step_bytes`` (a 0-byte start steps to 1 byte, as nccl-tests)."""
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size = size + step_bytes if step_bytes else max(size * factor, 1)
    return sizes


def _expand(config: BenchConfig, name: str, everything: list[str], canonical,
            what: str) -> list[str]:
    values: list[str] = getattr(config, name)
    if any(v.strip().lower() == "all" for v in values):
        return list(everything)
    result = []
    for value in values:
        known = canonical(value)
        if known is None:
            detail = f"unknown {what} '{value}'; accepted: {', '.join(everything)}, all"
            raise (invalid(config, name, detail) if name != "collectives" else
                   ConfigError(name, detail, "COLLECTIVE"))
        if known not in result:
            result.append(known)
    return result


def _positive(config: BenchConfig, name: str, allow_zero: bool = False) -> None:
    value = getattr(config, name)
    if value < 0 or (value == 0 and not allow_zero):
        raise invalid(config, name, f"{value} must be {'>= 0' if allow_zero else '> 0'}")
