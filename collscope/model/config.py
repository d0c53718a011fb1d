"""Typed requests of `collscope model predict` and `plan`, validated before anything runs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collscope.errors import UsageError
from collscope.model.formulas import ALGOS
from collscope.train.config import PRESETS

PLAN_HOOKS = ("none", "bf16", "fp16", "hierarchical")
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


@dataclass
class PredictRequest:
    collective: str
    nodes: list[int]
    ranks_per_node: int
    sizes: list[int]
    algo: str = "auto"
    dtype: str = "float"

    def __post_init__(self) -> None:
        if self.ranks_per_node < 1:
            raise UsageError(f"--ranks-per-node: {self.ranks_per_node} must be >= 1")
        if self.algo not in ("auto", *ALGOS):
            raise UsageError(f"--algo: '{self.algo}' is not accepted; use auto, "
                             f"{', '.join(ALGOS)}")
        if not self.sizes:
            raise UsageError("--sizes/-b/-e: no sizes in the range; use e.g. --sizes 1M-1G")


@dataclass
class PlanRequest:
    preset: str | None
    params: int | None
    nodes: list[int]
    ranks_per_node: int
    parallel: str = "ddp"
    bucket_cap_mb: float = 25.0
    comm_hook: str = "none"
    dtype: str = "bfloat16"
    step_compute_ms: float | None = None
    overlap: float | None = None
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.preset is None and self.params is None:
            raise UsageError(f"--preset/--params: give one: a preset ({', '.join(PRESETS)}) "
                             "or a parameter count")
        if self.preset is not None and self.preset not in PRESETS:
            raise UsageError(f"--preset: '{self.preset}' is not accepted; use "
                             f"{', '.join(PRESETS)}")
        if self.params is not None and self.params < 1:
            raise UsageError(f"--params: {self.params} must be >= 1")
        if self.ranks_per_node < 1:
            raise UsageError(f"--ranks-per-node: {self.ranks_per_node} must be >= 1")
        if self.parallel not in ("ddp", "fsdp"):
            raise UsageError(f"--parallel: '{self.parallel}' is not accepted; use ddp, fsdp")
        if self.parallel == "fsdp" and self.preset is None:
            raise UsageError("--parallel fsdp: needs --preset (FSDP shards per decoder layer)")
        if not self.bucket_cap_mb > 0:
            raise UsageError(f"--bucket-cap-mb: {self.bucket_cap_mb:g} must be > 0")
        if self.comm_hook not in PLAN_HOOKS:
            raise UsageError(f"--comm-hook: '{self.comm_hook}' is not accepted; use "
                             f"{', '.join(PLAN_HOOKS)}")
        if self.dtype not in PLAN_DTYPES:
            raise UsageError(f"--dtype: '{self.dtype}' is not accepted; use "
                             f"{', '.join(PLAN_DTYPES)}")
        if self.step_compute_ms is not None and not self.step_compute_ms > 0:
            raise UsageError(f"--step-compute-ms: {self.step_compute_ms:g} must be > 0")
        if self.overlap is not None and not 0 <= self.overlap <= 1:
            raise UsageError(f"--overlap: {self.overlap:g} must be between 0 and 1")
