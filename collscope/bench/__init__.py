"""Collective benchmarks with nccl-tests' numbers.

``collscope.bench.run(config)`` runs a sweep inside a process group the caller already
initialised and returns the result records (the same on every rank)::

    import torch.distributed as dist
    from collscope.bench import BenchConfig, run

    dist.init_process_group("nccl")
    results = run(BenchConfig(collectives=["all_reduce"], min_bytes=1 << 20,
                              max_bytes=1 << 30))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from collscope.bench.config import BenchConfig, BenchOutputs, sweep_sizes

if TYPE_CHECKING:
    from collscope.records.bench import BenchResult

__all__ = ["BenchConfig", "BenchOutputs", "run", "sweep_sizes"]


def run(config: BenchConfig, **kwargs: Any) -> list[BenchResult]:
    """See collscope.bench.runner.run; imported lazily so the CLI starts without torch."""
    from collscope.bench.runner import run as run_sweep

    return run_sweep(config, **kwargs)
