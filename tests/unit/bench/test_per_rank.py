"""Late-rank verdicts from per-rank own op times (pure; synthetic series with known answers)."""

from __future__ import annotations

import random

import pytest

from collscope.bench.per_rank import (
    OpClock,
    finding,
    finding_record,
    iteration_max,
    late_rank,
    report_lines,
)
from collscope.testing.faults import Fault


def _series(ranks: int, iters: int, late: int | None, wait_us: float = 2000.0,
            seed: int = 1) -> list[list[float]]:
    """Own op times: everyone ~op_us with jitter; the others also wait for ``late``."""
    rng = random.Random(seed)
    op_us = 300.0
    return [[op_us * rng.uniform(0.8, 1.2) + (wait_us if late is not None and r != late else 0)
             for _ in range(iters)] for r in range(ranks)]


@pytest.mark.parametrize("ranks,late", [(2, 1), (4, 2), (4, 0), (8, 7)])
def test_a_consistently_late_rank_is_named_with_its_wait(ranks, late):
    verdict = late_rank(_series(ranks, 20, late))
    assert verdict is not None and verdict.significant
    assert verdict.rank == late
    assert verdict.shortest == 20 and verdict.iterations == 20
    assert verdict.wait_us == pytest.approx(2000, rel=0.2)
    assert verdict.binom_p < 0.01 and verdict.wilcoxon_p < 0.01


@pytest.mark.parametrize("seed", range(8))
def test_jitter_alone_names_no_rank(seed):
    verdict = late_rank(_series(4, 20, None, seed=seed))
    assert verdict is not None and not verdict.significant


def test_a_rank_shortest_by_chance_a_few_times_is_not_enough():
    # Rank 1 is shortest in 8 of 20 iterations (chance: 5): binomial p > 0.01.
    times = [[10.0] * 20 for _ in range(4)]
    for i in range(20):
        times[1 if i < 8 else i % 4 if i % 4 != 1 else 0][i] = 5.0
    verdict = late_rank(times)
    assert verdict is not None and verdict.rank == 1 and not verdict.significant


def test_too_little_data_gives_no_verdict():
    assert late_rank([[1.0, 2.0]]) is None            # one rank
    assert late_rank([[1.0], [2.0]]) is None          # one iteration


def test_finding_needs_most_sizes_beyond_chance():
    hosts = ["a", "a", "b", "b"]
    late = [late_rank(_series(4, 20, 2, seed=s)) for s in range(6)]
    found = finding(late, 4, hosts)
    assert found is not None and (found.rank, found.host) == (2, "b")
    assert (found.sizes_late, found.sizes) == (6, 6) and found.binom_p < 0.01
    assert "rank 2 on b" in found.message() and "binomial" in found.message()
    quiet = [late_rank(_series(4, 20, None, seed=s)) for s in range(6)]
    assert finding(quiet, 4, hosts) is None
    # Late in half the sizes only: not "most".
    mixed = late[:3] + quiet[:3]
    assert finding(mixed, 4, hosts) is None
    record = finding_record(late, 4, hosts).to_dict()
    assert (record["kind"], record["level"], record["rank"]) == ("finding", "warn", 2)
    assert record["detail"] == found.message()
    assert record["at_stake_ms"] == pytest.approx(found.median_wait_us / 1e3)
    none = finding_record(quiet, 4, hosts)
    assert (none.level, none.rank, none.at_stake_ms) == ("info", None, 0.0)
    assert none.detail.startswith("none")


def test_iteration_max_is_the_slowest_process_per_iteration():
    assert iteration_max([[1.0, 5.0, 2.0], [3.0, 1.0, 2.5]]) == [3.0, 5.0, 2.5]
    assert iteration_max([]) == []


def test_report_lines_name_rank_and_host_or_none():
    named = late_rank(_series(4, 20, 3))
    quiet = late_rank(_series(4, 20, None))
    lines = report_lines([("all_reduce", 65536, True, named), ("all_reduce", 131072, True, quiet)],
                         ["h0", "h1", "h2", "h3"])
    assert all(line.startswith("#") for line in lines)
    assert "Wilcoxon" in lines[0] and "binomial" in lines[0]
    assert "65536" in lines[2] and " 3  h3" in lines[2]
    assert "none" in lines[3]


def test_op_clock_sleeps_outside_the_op_and_keeps_the_last_n():
    import time

    import torch

    calls = []
    clock = OpClock(torch.device("cpu"), keep=3, delay=Fault("delay", 0, 20.0))
    launch = clock.wrap(lambda: calls.append(time.perf_counter()))
    started = time.perf_counter()
    for _ in range(5):
        launch()
    assert time.perf_counter() - started >= 5 * 0.02      # slept before each launch
    times = clock.times()
    assert len(times) == 3 and len(calls) == 5
    assert max(times) < 0.01                              # the sleep is not in the op time


def test_finding_counts_candidates_so_one_noisy_size_does_not_hide_the_rank():
    from dataclasses import replace

    late = [late_rank(_series(4, 20, 1, seed=s)) for s in range(5)]
    late[2] = replace(late[2], significant=False)       # a size where noise hid it
    found = finding(late, 4, ["a", "b", "c", "d"])
    assert found is not None and found.rank == 1 and found.sizes_late == 5


@pytest.mark.parametrize("ranks,need", [(2, 8), (3, 6), (4, 5), (8, 4)])
def test_min_late_trials_is_where_ranks_times_one_over_ranks_to_the_k_drops_below_alpha(
        ranks, need):
    from collscope.stats.significance import late_rank_p, min_late_trials

    assert min_late_trials(ranks, 0.01) == need
    assert late_rank_p(need, need, ranks) < 0.01 <= late_rank_p(need - 1, need - 1, ranks)


def test_too_few_sizes_is_said_not_no_late_rank():
    from collscope.bench.per_rank import finding_line

    # Review item 7: 3 ranks, 3 sizes, rank 2 late in every one of them (each size's own
    # test significant); the sign test over sizes cannot go below 3 * (1/3)^3 = 0.11.
    late = [late_rank(_series(3, 20, 2, seed=s)) for s in range(3)]
    assert all(v is not None and v.significant and v.rank == 2 for v in late)
    line = finding_line(late, 3, ["a", "b", "c"])
    assert line.startswith("none: too few sizes to decide (need >= 6 for p < 0.01 with 3 ranks")
    assert "beyond chance" not in line
    # Enough sizes: the rank is named; jitter with enough sizes: the plain "none".
    enough = [late_rank(_series(3, 20, 2, seed=s)) for s in range(6)]
    assert finding_line(enough, 3, ["a", "b", "c"]).startswith("rank 2 on c")
    quiet = [late_rank(_series(3, 20, None, seed=s)) for s in range(6)]
    assert "beyond chance" in finding_line(quiet, 3, ["a", "b", "c"])
