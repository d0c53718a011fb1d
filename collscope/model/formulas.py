"""Cost formulas of collectives on a two-level fabric (pure, no I/O).

Conventions (nccl-tests' busbw convention, doc/PERFORMANCE.md of nccl-tests): S is the size
column of nccl-tests (bytes of the full buffer), n = N x R ranks (N nodes, R ranks per node),
f(n) the bus factor of the collective (``collscope.collectives.table``: 2(n-1)/n for
all_reduce, (n-1)/n for all_gather / reduce_scatter / alltoall, 1 for the others). One group of
measurements is fitted as

    t(S) = alpha + S x f(n) / B                       (alpha in us, B in GB/s = 1e3 B/us)

so B is the busbw the group approaches at large sizes and alpha its latency. A fabric level
(intra-node, inter-node) holds a latency per algorithm step ``a`` and a bandwidth ``B``:
``a = alpha / steps(n)`` and ``B`` of a group measured on that level (single-node groups give
the intra-node level, multi-node groups the inter-node one).

Algorithms (all_reduce; the other collectives have the ring form only):

- ring (NCCL's ring, a flat ring over all n ranks; pipelined, so each step waits for its
  slowest hop, which is an inter-node hop when N > 1):
      t = steps(n) x a + S x f(n) / B,   steps = 2(n-1) for all_reduce, n-1 for
      all_gather / reduce_scatter / alltoall / broadcast / reduce, 1 for sendrecv;
      (a, B) of the inter-node level when N > 1, else of the intra-node level.
  Every ring crosses each node boundary once per direction, so B of a multi-node ring is the
  node's injection bandwidth as the ring sees it, whatever R is.
- tree (NCCL's double binary tree across nodes, a chain inside each node; NCCL's tuning model
  gives it the ring's bandwidth and a logarithmic latency):
      t = 2 x ((R-1) x a_intra + ceil(log2 N) x a_inter) + S x f(n) / B_ring
- hierarchical (collscope's hierarchical hook: intra-node reduce-scatter, inter-node
  all-reduce of each rank's shard, intra-node all-gather):
      t = 2 x [(R-1) x a_intra + S (R-1)/R / B_intra]            (reduce-scatter + all-gather)
          + 2(N-1) x a_inter + S x 2(N-1)/N / B_inter            (R shards of S/R share a node)
  A node then sends 2(N-1)/N x S across its boundary against 2(n-1)/n x S for the ring.

busbw of every prediction is nccl-tests' S / t x f(n) with the job's n, whatever the algorithm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from collscope.collectives.table import bus_factor

ALGOS = ("ring", "tree", "hierarchical")
# Collectives with a tree / hierarchical formula here; the others have the ring form only.
MULTI_ALGO = frozenset({"all_reduce"})


@dataclass(frozen=True)
class Level:
    """One fabric level: latency per algorithm step (us) and bandwidth (GB/s, busbw
    convention), with the measured group it came from."""

    step_us: float
    busbw_gbs: float
    source: str = ""

    def __post_init__(self) -> None:
        if not (self.step_us >= 0 and math.isfinite(self.step_us)):
            raise ValueError(f"step latency {self.step_us!r} must be a finite number >= 0")
        if not (self.busbw_gbs > 0 and math.isfinite(self.busbw_gbs)):
            raise ValueError(f"bandwidth {self.busbw_gbs!r} must be a finite number > 0")


def steps(collective: str, world_size: int) -> int:
    """Steps of the ring algorithm of ``collective`` on ``world_size`` ranks (>= 1)."""
    n = world_size
    if n <= 1:
        return 1
    if collective == "all_reduce":
        return 2 * (n - 1)
    if collective == "sendrecv":
        return 1
    return n - 1


def alpha_beta_time(size_bytes: float, alpha_us: float, busbw_gbs: float, collective: str,
                    world_size: int) -> float:
    """t = alpha + S f(n) / B, in us (B in GB/s: 1 GB/s = 1e3 bytes/us)."""
    return alpha_us + size_bytes * bus_factor(collective, world_size) / (busbw_gbs * 1e3)


def ring_time(collective: str, size_bytes: float, nodes: int, ranks_per_node: int,
              level: Level) -> float:
    """Flat ring over N x R ranks on ``level`` (the inter-node level when N > 1)."""
    n = nodes * ranks_per_node
    return steps(collective, n) * level.step_us + \
        alpha_beta_time(size_bytes, 0.0, level.busbw_gbs, collective, n)


def tree_time(size_bytes: float, nodes: int, ranks_per_node: int, intra: Level | None,
              inter: Level | None) -> float:
    """all_reduce by a tree across nodes and a chain inside each (see the module docstring)."""
    n = nodes * ranks_per_node
    chain = (ranks_per_node - 1) * _level(intra, "intra").step_us if ranks_per_node > 1 else 0.0
    across = math.ceil(math.log2(nodes)) * _level(inter, "inter").step_us if nodes > 1 else 0.0
    bottleneck = _level(inter, "inter") if nodes > 1 else _level(intra, "intra")
    return 2 * (chain + across) + alpha_beta_time(size_bytes, 0.0, bottleneck.busbw_gbs,
                                                  "all_reduce", n)


def hierarchical_time(size_bytes: float, nodes: int, ranks_per_node: int,
                      intra: Level | None, inter: Level | None) -> float:
    """Intra reduce-scatter + inter all-reduce of the shards + intra all-gather."""
    r, big_n = ranks_per_node, nodes
    time = 0.0
    if r > 1:
        level = _level(intra, "intra")
        time += 2 * ((r - 1) * level.step_us + size_bytes * (r - 1) / r / (level.busbw_gbs * 1e3))
    if big_n > 1:
        level = _level(inter, "inter")
        time += 2 * (big_n - 1) * level.step_us + \
            size_bytes * 2 * (big_n - 1) / big_n / (level.busbw_gbs * 1e3)
    return time


class MissingLevel(ValueError):
    """An algorithm needs a fabric level the model does not hold."""


def _level(level: Level | None, name: str) -> Level:
    if level is None:
        raise MissingLevel(f"no {name}-node parameters in the model")
    return level


def busbw(size_bytes: float, time_us: float, collective: str, world_size: int) -> float:
    """nccl-tests busbw (GB/s) of ``size_bytes`` in ``time_us`` on ``world_size`` ranks."""
    if time_us <= 0:
        return 0.0
    return size_bytes / (time_us * 1e3) * bus_factor(collective, world_size)
