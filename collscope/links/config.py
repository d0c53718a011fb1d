"""`collscope links` configuration: one typed dataclass, validated on construction (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.config_flags import (
    backend_flag,
    flag,
    invalid,
    json_flag,
    timeout_flag,
)
from collscope.errors import UsageError
from collscope.links.schedule import parse_pairs
from collscope.units import parse_size

DEFAULT_SIZE = 64 * 1024**2


@dataclass
class LinksConfig:
# One flag a field, each declared where it is read (config_flags): the fields' one shape is
# the declaration, as in every config (trace/config.py, watch/config.py).
    size_bytes: int = flag(DEFAULT_SIZE, "-b", "--size", parse=parse_size, shown="64M",
                           help="message size per direction, bandwidth-bound")
    iters: int = flag(5, "-n", "--iters", type=int, help="timed exchanges per pair")
    warmup_iters: int = flag(1, "-w", "--warmup-iters", type=int,
                             help="untimed exchanges per pair first")
    pairs: str = flag("all", "--pairs", show_default=False,
                      help="all (every node pair once) or random:K (K random partners per "
                           "node, for very large jobs)")
    per_gpu: bool = flag(False, "--per-gpu",
                         help="across nodes, every local rank exchanges with the same local "
                              "rank of the partner node at once (each GPU on its own NIC)")
    fraction: float = flag(0.7, "--fraction", type=float,
                           help="slow below this fraction of the median of the links between "
                                "healthy nodes")
    expected_fraction: float = flag(0.5, "--expected-fraction", type=float,
                                    help="GPU pairs below this fraction of their link type's "
                                         "nominal bandwidth fail")
    confirm: int = flag(1, "--confirm", type=int,
                        help="run each round holding a failing link again up to this many "
                             "times; a link fails only if it fails every try (0: no retry)")
    pair_budget_s: float = flag(10.0, "--pair-budget", type=float,
                                help="seconds one pair may exchange in one round (warm-ups "
                                     "included; the pairs of a round run at once, so this "
                                     "bounds each round too): it stops once the next "
                                     "exchange would end later, after at least one timed one")
    seed: int = flag(0, "--seed", type=int, show_default=False,
                     help="seed of --pairs random:K")
    backend: str = backend_flag()
    timeout_s: float = timeout_flag("any exchange")
    partners: int | None = field(init=False, default=None)   # from pairs: None = every pair

    def __post_init__(self) -> None:
        if self.size_bytes < 4:
            raise invalid(self, "size_bytes", f"{self.size_bytes} must be >= 4 bytes (one float)")
        self.size_bytes -= self.size_bytes % 4     # whole float32 elements
        if self.iters < 1:
            raise invalid(self, "iters", f"{self.iters} must be >= 1")
        if self.warmup_iters < 0:
            raise invalid(self, "warmup_iters", f"{self.warmup_iters} must be >= 0")
        if self.confirm < 0:
            raise invalid(self, "confirm", f"{self.confirm} must be >= 0 tries")
        self.partners = parse_pairs(self.pairs)
        if not 0 < self.fraction < 1:
            raise invalid(self, "fraction", f"{self.fraction} must be between 0 and 1, e.g. 0.7")
        if not 0 < self.expected_fraction <= 1:
            raise invalid(self, "expected_fraction",
                          f"{self.expected_fraction} must be in (0, 1]")
        if not self.pair_budget_s > 0:
            raise invalid(self, "pair_budget_s", f"{self.pair_budget_s} must be > 0 seconds")
        if self.timeout_s <= 0:
            raise invalid(self, "timeout_s", f"{self.timeout_s} must be > 0 seconds")

    def validate_for_job(self, world_size: int, _backend: str) -> None:
        if world_size < 2:
            raise UsageError("--nproc: links needs at least 2 ranks (pairs exchange)")


@dataclass(frozen=True)
class LinksOutputs:
    """What rank 0 writes besides stdout; not part of the recorded configuration."""

    json: str | None = json_flag("write JSON Lines (run, link and node records); '-' for "
                                 "stdout (then nothing else goes there)")
