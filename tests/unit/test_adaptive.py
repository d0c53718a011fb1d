"""Adaptive bench: each result records the precision it reached and whether the time budget
ended first; the table's footer names those sizes."""

from __future__ import annotations

import msgspec
import pytest
import torch.distributed as dist

from collscope.bench import BenchConfig, run
from collscope.bench.output import footer
from tests.unit.report.samples import result


@pytest.fixture
def one_rank_group():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_results_record_ci_and_whether_the_budget_ended_first(one_rank_group):
    common = dict(min_bytes=1024, max_bytes=4096, step_factor=4, iters=10, warmup_iters=1,
                  check=0)
    unreachable = run(BenchConfig(target_precision=1e-9, time_budget_s=0.05, **common))
    assert unreachable and all(r.budget_exhausted for r in unreachable)
    assert all(r.ci_halfwidth is not None and r.ci_halfwidth > 1e-9 for r in unreachable)
    easy = run(BenchConfig(target_precision=100.0, time_budget_s=30, **common))
    assert easy and not any(r.budget_exhausted for r in easy)
    fixed = run(BenchConfig(**common))          # fixed iterations: the CI is still recorded
    assert all(r.ci_halfwidth is not None and not r.budget_exhausted for r in fixed)


def test_footer_names_the_sizes_whose_budget_ended():
    done = result("all_reduce", 1024, 10.0)
    short = msgspec.structs.replace(result("all_reduce", 4096, 20.0), budget_exhausted=True,
                                ci_halfwidth=0.034)
    lines = footer([done, short])
    assert "# Time budget ended before the precision target at: 4096 B (+-3.4%)" in lines
    assert not any("budget" in line for line in footer([done]))
