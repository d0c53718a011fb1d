"""bench's runner on a one-rank gloo group: #wrong is N/A unless the check ran, a collective
with no placement to run is skipped, own op times (and their clock) only with --per-rank, and
in adaptive mode the nccl-tests JSON states the iterations its per-iteration blocks hold."""

from __future__ import annotations

import pytest
import torch.distributed as dist

from collscope.bench import BenchConfig, nccl_json, per_rank, run
from collscope.bench.output import footer, row

COMMON = dict(min_bytes=1024, max_bytes=2048, iters=4, warmup_iters=1)


@pytest.fixture
def one_rank_group():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _document(results, config):
    return nccl_json.document(results, config, [], ["collscope", "bench"], {}, None, 0.0, 1.0)


def test_without_the_check_wrong_is_na_and_the_footer_says_unchecked(one_rank_group):
    config = BenchConfig(check=0, **COMMON)
    results = run(config)
    assert results and all(r.wrong is None for r in results)
    assert "# Out of bounds values : N/A unchecked (no result was verified)" in footer(results)
    assert row(None, results[0]).split()[-1] == "N/A"
    assert _document(results, config)["out_of_bounds"] == {"count": None, "okay": "unchecked"}
    checked = run(BenchConfig(**COMMON))           # -c 1: counted, 0 and OK as before
    assert all(r.wrong == 0 for r in checked)
    assert "# Out of bounds values : 0 OK" in footer(checked)
    assert _document(checked, config)["out_of_bounds"] == {"count": 0, "okay": "true"}


def test_a_collective_with_no_placement_to_run_is_skipped(one_rank_group):
    printed: list[str] = []
    config = BenchConfig(collectives=["all_reduce", "all_gather"], in_place=False, **COMMON)
    results = run(config, on_row=lambda plan, got: printed.append(
        row(got.get(False), got.get(True))))
    assert {r.collective for r in results} == {"all_gather"}
    assert all(not r.in_place for r in results) and len(printed) == 2


def test_no_op_clock_wraps_the_launch_without_per_rank(one_rank_group, monkeypatch):
    made: list[int] = []
    clock = per_rank.OpClock

    def counting_clock(*args, **kwargs):
        made.append(1)
        return clock(*args, **kwargs)

    monkeypatch.setattr(per_rank, "OpClock", counting_clock)
    plain = run(BenchConfig(**COMMON))
    assert made == []
    assert all(r.rank_op_us is None and len(r.rank_times_us[0]) == 4 for r in plain)
    timed = run(BenchConfig(**COMMON), own_op_times=True)
    assert len(made) == len(timed) == 2
    assert all(len(r.rank_op_us[0]) == 4 and len(r.rank_times_us[0]) == 4 for r in timed)


def test_adaptive_nccl_json_states_the_iterations_it_kept(one_rank_group):
    config = BenchConfig(target_precision=1e-9, time_budget_s=0.05, **COMMON)
    results = run(config, own_op_times=True)
    assert results and all(r.iters > config.iters for r in results)   # several batches ran
    for result in results:           # each rank keeps the last -n of them
        assert [len(s) for s in result.rank_times_us + result.rank_op_us] == [4, 4]
        entry = nccl_json.result_entry(None, result)
        assert entry["actual_iterations"] == len(entry["in_place_per_iter"]["times_us"]) == 4
        # The late-rank test judges the same kept iterations.
        late = per_rank.late_rank(result.rank_op_us * 2)
        assert late is not None and late.iterations == entry["actual_iterations"]
