"""Typed requests of `collscope model fit`, `predict`, `plan` and `check`: each field is its
flag (collscope.config_flags), validated before anything runs (pure: no scipy, no reading)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collscope.config_flags import (
    REQUIRED,
    check_choice,
    flag,
    invalid,
    json_flag,
    output_flag,
    stdout_once,
)
from collscope.errors import UsageError
from collscope.model.formulas import ALGOS
from collscope.train.config import PRESETS

PLAN_HOOKS = ("none", "bf16", "fp16", "hierarchical")
DDP_BUCKET_CAP_MB = 25.0    # DDP's default bucket_cap_mb
PLAN_DTYPES = {"bfloat16": "bfloat16", "float32": "float"}   # flag value -> bench dtype name


def parse_counts(text: str, flag: str) -> list[int]:
    """'1,2,4' -> [1, 2, 4]; UsageError unless every item is an integer >= 1."""
    items = [item.strip() for item in str(text).split(",") if item.strip()]
    if not items or not all(re.fullmatch(r"-?\d+", item) for item in items):
        raise UsageError(f"{flag}: '{text}' is not a list of whole numbers, e.g. 1,2,4")
    counts = [int(item) for item in items]
    bad = [c for c in counts if c < 1]
    if bad:
        raise UsageError(f"{flag}: {bad[0]} must be >= 1")
    return list(dict.fromkeys(counts))


def model_flag() -> str:
    return flag(REQUIRED, "model", metavar="MODEL.json", help="a model file of `model fit`")


def inputs_flag() -> list[str]:
    return flag(REQUIRED, "inputs", metavar="INPUT", nargs="+",
                help="collscope JSON Lines (bench, import) or nccl-tests / rccl-tests logs")


def records_flag(what: str) -> str | None:
    """--json of a model subcommand, writing ``what``."""
    return json_flag(f"write {what} as JSON Lines records ('-': to stdout only)")


@dataclass(kw_only=True)
class FitRequest:
    inputs: list[str] = inputs_flag()
    output: str = output_flag("MODEL.json", "model file to write ('-' for stdout)")
    holdout_nodes: list[int] = flag([], "--holdout-nodes", metavar="N[,N...]",
                                    parse=parse_counts,
                                    help="leave these node counts out of the fit (validate "
                                         "with check)")
    json: str | None = records_flag("a model_fit record and one model_group record per group")

    def __post_init__(self) -> None:
        stdout_once(self, "output", "json")


@dataclass(kw_only=True)
class PredictRequest:
    model: str = model_flag()
    collective: str = flag(REQUIRED, "--collective", help="e.g. all_reduce")
    nodes: list[int] = flag(REQUIRED, "--nodes", metavar="N[,N...]", parse=parse_counts,
                            help="node counts")
    ranks_per_node: int = flag(REQUIRED, "--ranks-per-node", type=int, metavar="R")
    size_range: str | None = flag(None, "--sizes", metavar="MIN-MAX",
                                  help="size range, e.g. 1M-8G (steps of -f)")
    min_bytes: str = flag("1M", "-b", "--min-bytes", help="smallest size")
    max_bytes: str = flag("1G", "-e", "--max-bytes", help="largest size")
    step_factor: int = flag(2, "-f", "--step-factor", type=int,
                            help="multiply the size by this each step")
    algo: str = flag("auto", "--algo", show_default=False,
                     help="auto (fastest the model holds), ring, tree, hierarchical")
    dtype: str = flag("float", "-d", "--dtype", help="element type for the count column")
    json: str | None = records_flag("one prediction record per row")
    sizes: list[int] = field(init=False)

    def __post_init__(self) -> None:
        from collscope.collectives.dtypes import canonical_dtype
        from collscope.collectives.table import canonical_name

        self.collective = canonical_name(self.collective) or self.collective
        dtype = canonical_dtype(self.dtype)
        if dtype is None:
            raise invalid(self, "dtype", f"'{self.dtype}' is not a type collscope knows; use "
                                         "float, half, bfloat16, double, int32, ...")
        self.dtype = dtype
        if self.ranks_per_node < 1:
            raise invalid(self, "ranks_per_node", f"{self.ranks_per_node} must be >= 1")
        check_choice(self, "algo", ("auto", *ALGOS))
        self.sizes = self._sizes()
        if not self.sizes:
            raise UsageError("--sizes/-b/-e: no sizes in the range; use e.g. --sizes 1M-1G")

    def _sizes(self) -> list[int]:
        from collscope.bench.config import sweep_sizes
        from collscope.units import parse_size

        if self.size_range:
            low_text, sep, high_text = self.size_range.partition("-")
            if not sep:
                raise invalid(self, "size_range", f"'{self.size_range}' is not MIN-MAX, e.g. "
                                                  "1M-8G")
            low, high = parse_size(low_text, "--sizes"), parse_size(high_text, "--sizes")
        else:
            low, high = parse_size(self.min_bytes, "-b"), parse_size(self.max_bytes, "-e")
        if low < 1 or high < low:
            raise UsageError(f"--sizes/-b/-e: {low}-{high} bytes: need 1 <= MIN <= MAX")
        if self.step_factor < 2:
            raise invalid(self, "step_factor", f"{self.step_factor} must be >= 2")
        return sweep_sizes(low, high, self.step_factor)


CHECK_ALGOS = ("auto", "ring", "tree")


@dataclass(kw_only=True)
class CheckRequest:
    model: str = model_flag()
    inputs: list[str] = inputs_flag()
    algo: str = flag("auto", "--algo", show_default=False,
                     help="flat rows: auto (fastest of ring and tree, as NCCL/RCCL pick), "
                          "ring (gloo's all_reduce) or tree")
    json: str | None = records_flag("check_row, check_band and a check summary")

    def __post_init__(self) -> None:
        check_choice(self, "algo", CHECK_ALGOS)

    @property
    def flat_algos(self) -> tuple[str, ...]:
        return ("ring", "tree") if self.algo == "auto" else (self.algo,)


@dataclass(kw_only=True)
class PlanRequest:
    model: str = model_flag()
    preset: str | None = flag(None, "--preset",
                              help="tiny, small, 1b, llama2-7b (the shapes `collscope train` "
                                   "uses)")
    params: int | None = flag(None, "--params", type=int,
                              help="parameter count instead of a preset (DDP only)")
    nodes: list[int] = flag(REQUIRED, "--nodes", metavar="N[,N...]", parse=parse_counts)
    ranks_per_node: int = flag(REQUIRED, "--ranks-per-node", type=int, metavar="R")
    parallel: str = flag("ddp", "--parallel", show_default=False, help="ddp or fsdp")
    bucket_cap_mb: float = flag(DDP_BUCKET_CAP_MB, "--bucket-cap-mb", type=float, shown="25, DDP's",
                                help="DDP bucket cap")
    comm_hook: str = flag("none", "--comm-hook", show_default=False,
                          help="none, bf16, fp16, hierarchical")
    dtype: str = flag("bfloat16", "--dtype", show_default=False,
                      help="parameters and gradients: bfloat16 (default) or float32")
    step_compute_ms: float | None = flag(None, "--step-compute-ms", type=float,
                                         help="compute per step (ms) when there is no --train "
                                              "record")
    train: str | None = flag(None, "--train", metavar="TRAIN.jsonl",
                             help="`collscope train` records: compute per step (no-sync step) "
                                  "and overlap come from the measured DDP default (or first) "
                                  "record")
    overlap: float | None = flag(None, "--overlap", type=float,
                                 help="fraction of communication hidden under compute, 0-1 "
                                      "(default: from --train, else 0: nothing hidden)")
    json: str | None = records_flag("a plan record, then one plan_row record per node count")

    def __post_init__(self) -> None:
        if self.preset is None and self.params is None:
            raise UsageError(f"--preset/--params: give one: a preset ({', '.join(PRESETS)}) "
                             "or a parameter count")
        if self.preset is not None and self.params is not None:
            raise UsageError(f"--preset/--params: give one, not both (--preset {self.preset} "
                             f"fixes the parameter count at its own; --params {self.params} "
                             "is for a model without a preset)")
        if self.preset is not None and self.preset not in PRESETS:
            raise invalid(self, "preset", f"'{self.preset}' is not accepted; use "
                                          f"{', '.join(PRESETS)}")
        if self.params is not None and self.params < 1:
            raise invalid(self, "params", f"{self.params} must be >= 1")
        if self.ranks_per_node < 1:
            raise invalid(self, "ranks_per_node", f"{self.ranks_per_node} must be >= 1")
        check_choice(self, "parallel", ("ddp", "fsdp"))
        if self.parallel == "fsdp" and self.preset is None:
            raise UsageError("--parallel fsdp: needs --preset (FSDP shards per decoder layer)")
        # DDP's knobs mean nothing to FSDP (it reduce-scatters each layer in --dtype): refused
        # rather than silently ignored, so a plan never seems to reflect a hook it did not use.
        if self.parallel == "fsdp" and self.comm_hook != "none":
            raise UsageError(f"--comm-hook {self.comm_hook}: DDP communication hooks do not "
                             "apply to --parallel fsdp; drop it or plan --parallel ddp")
        if self.parallel == "fsdp" and self.bucket_cap_mb != DDP_BUCKET_CAP_MB:
            raise UsageError(f"--bucket-cap-mb {self.bucket_cap_mb:g}: DDP's bucket cap does "
                             "not apply to --parallel fsdp (it communicates per layer); drop "
                             "it or plan --parallel ddp")
        if not self.bucket_cap_mb > 0:
            raise invalid(self, "bucket_cap_mb", f"{self.bucket_cap_mb:g} must be > 0")
        check_choice(self, "comm_hook", PLAN_HOOKS)
        check_choice(self, "dtype", PLAN_DTYPES)
        if self.step_compute_ms is not None and not self.step_compute_ms > 0:
            raise invalid(self, "step_compute_ms", f"{self.step_compute_ms:g} must be > 0")
        if self.overlap is not None and not 0 <= self.overlap <= 1:
            raise invalid(self, "overlap", f"{self.overlap:g} must be between 0 and 1")
