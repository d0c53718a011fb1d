"""`collscope links` configuration: one typed dataclass, validated on construction (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.errors import UsageError
from collscope.links.schedule import parse_pairs

DEFAULT_SIZE = 64 * 1024**2


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class LinksConfig:
    size_bytes: int = field(default=DEFAULT_SIZE, metadata=_help(
        "bytes each rank of a pair sends to the other per iteration (bandwidth-bound)"))
    iters: int = field(default=5, metadata=_help("timed exchanges per pair"))
    warmup_iters: int = field(default=1, metadata=_help("untimed exchanges per pair first"))
    pairs: str = field(default="all", metadata=_help(
        "all (round-robin tournament: every node pair once) or random:K partners per node"))
    per_gpu: bool = field(default=False, metadata=_help(
        "across nodes, every local rank exchanges with the same local rank of the partner "
        "node at once (each on its own GPU/NIC), instead of one rank per node"))
    fraction: float = field(default=0.7, metadata=_help(
        "slow below this fraction of the median of the links between healthy nodes"))
    expected_fraction: float = field(default=0.5, metadata=_help(
        "intra-node pairs below this fraction of their link type's nominal bandwidth fail"))
    seed: int = field(default=0, metadata=_help("seed of --pairs random:K"))
    backend: str = "auto"
    timeout_s: float = field(default=300.0, metadata=_help(
        "seconds any exchange or round may take before every rank exits"))
    partners: int | None = field(init=False, default=None)   # from pairs: None = every pair

    def __post_init__(self) -> None:
        if self.size_bytes < 4:
            raise UsageError(f"-b/--size: {self.size_bytes} must be >= 4 bytes (one float)")
        self.size_bytes -= self.size_bytes % 4     # whole float32 elements
        if self.iters < 1:
            raise UsageError(f"-n/--iters: {self.iters} must be >= 1")
        if self.warmup_iters < 0:
            raise UsageError(f"-w/--warmup-iters: {self.warmup_iters} must be >= 0")
        self.partners = parse_pairs(self.pairs)
        if not 0 < self.fraction < 1:
            raise UsageError(f"--fraction: {self.fraction} must be between 0 and 1, e.g. 0.7")
        if not 0 < self.expected_fraction <= 1:
            raise UsageError(f"--expected-fraction: {self.expected_fraction} must be in (0, 1]")
        if self.timeout_s <= 0:
            raise UsageError(f"--timeout: {self.timeout_s} must be > 0 seconds")

    def validate_for_job(self, world_size: int, _backend: str) -> None:
        if world_size < 2:
            raise UsageError("--nproc: links needs at least 2 ranks (pairs exchange)")
