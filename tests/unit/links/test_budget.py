"""Bounded time per pair (pure): the budget, the early decision and the deciding size."""

from __future__ import annotations

import itertools
import statistics

import pytest

from collscope.links.budget import (
    LATENCY_FACTOR,
    decided,
    deciding_size,
    next_exchange,
    probe_bytes,
    settled,
    spread,
)

MIB = 1 << 20


@pytest.mark.parametrize("iters", [1, 2, 3, 4, 5, 6])
def test_an_early_decision_is_the_verdict_every_completion_would_give(iters):
    """Exhaustively: whenever ``decided`` settles a prefix of iterations, every way the other
    iterations could come out (below, at or above the limit) gives that verdict, and so does
    the median of the prefix itself."""
    limit = 1.0
    values = (0.5, 1.0, 2.0)                      # below, exactly at (ok), above the limit
    for done in range(1, iters + 1):
        for prefix in itertools.product(values, repeat=done):
            verdict = decided(prefix, limit, iters)
            if verdict is None:
                continue
            assert ("slow" if statistics.median(prefix) > limit else "ok") == verdict
            for rest in itertools.product(values, repeat=iters - done):
                full = statistics.median(prefix + rest)
                assert ("slow" if full > limit else "ok") == verdict, (prefix, rest)


def test_a_decision_needs_a_majority_of_all_iterations_on_one_side():
    assert decided([3.0], 1.0, 5) is None                   # one slow of five: not yet
    assert decided([3.0, 3.0], 1.0, 5) is None
    assert decided([3.0, 3.0, 3.0], 1.0, 5) == "slow"       # 3 of 5: the median is slow
    assert decided([3.0, 0.5, 3.0, 0.5], 1.0, 5) is None
    assert decided([0.5, 0.5, 1.0], 1.0, 5) == "ok"         # at the limit passes, as judge
    assert decided([3.0], 1.0, 1) == "slow"


def test_a_pair_that_fits_its_budget_runs_every_warmup_and_iteration():
    steps, warmups, timed, elapsed = [], 0, 0, 0.05
    while (step := next_exchange(warmups, timed, elapsed, 0.1, 2, 5, 10.0, False)):
        steps.append(step)
        warmups += step == "warmup"
        timed += step == "timed"
        elapsed += 0.1
    assert steps == ["warmup"] * 2 + ["timed"] * 5


def test_a_slow_pair_skips_the_warmup_and_stops_after_one_timed_exchange():
    # The probe (1/64 of the size) took 0.1 s: a full exchange takes about 6.4 s, so a warm-up
    # and a timed exchange (12.8 s) do not fit a 10 s budget; after one timed one, neither
    # does a second.
    assert next_exchange(0, 0, 0.1, 6.4, 1, 5, 10.0, False) == "timed"
    assert next_exchange(0, 1, 6.5, 6.4, 1, 5, 10.0, False) is None


def test_warmups_run_only_when_the_whole_plan_fits():
    # A probe through a shaper's burst understates a full exchange (4.5 s for 5.6 s): one
    # warm-up and one timed exchange would seem to fit 10 s, the whole plan (6 x 4.5) does not.
    assert next_exchange(0, 0, 0.07, 4.5, 1, 5, 10.0, False) == "timed"
    assert next_exchange(0, 0, 0.07, 1.5, 1, 5, 10.0, False) == "warmup"     # 9.07 s fits
    assert next_exchange(1, 0, 1.6, 1.5, 1, 5, 10.0, False) == "timed"


def test_at_least_one_timed_exchange_whatever_the_budget():
    assert next_exchange(0, 0, 100.0, 50.0, 1, 5, 1.0, False) == "timed"
    assert next_exchange(0, 1, 100.0, 50.0, 1, 5, 1.0, False) is None


def test_a_settled_pair_stops_and_a_pair_without_a_direction_under_test_never_settles():
    assert next_exchange(0, 3, 0.1, 0.01, 1, 5, 10.0, True) is None
    assert settled([2, 2]) and settled([2, 0])
    assert not settled([2, 1]) and not settled([0, 0]) and not settled([1, 0])


def test_the_probe_is_a_64th_of_the_size_in_whole_floats():
    assert probe_bytes(64 * MIB) == MIB
    assert probe_bytes(100) == 4 and probe_bytes(4) == 4


def test_a_link_far_below_the_limit_is_confirmed_at_a_small_bandwidth_dominated_size():
    # 200 Mbit/s node against a 0.2 GB/s limit, 200 us latency: a link at the limit needs
    # 10 x 200 us x 0.2 GB/s = 0.4 MB to be bandwidth-dominated -> 512 KiB of 64 MiB.
    size = deciding_size(64 * MIB, 200e-6, 0.012, 0.2)
    assert size == MIB // 2
    assert size / 0.2e9 >= LATENCY_FACTOR * 200e-6                          # dominated
    assert size * (1 / 0.012e9 - 1 / 0.2e9) >= LATENCY_FACTOR * 200e-6       # apart
    assert size // 2 / 0.2e9 < LATENCY_FACTOR * 200e-6                       # the smallest


def test_a_link_just_below_the_limit_needs_a_larger_size_than_one_far_below():
    far = deciding_size(64 * MIB, 50e-6, 0.1, 1.0)
    near = deciding_size(64 * MIB, 50e-6, 0.9, 1.0)
    assert far < near <= 64 * MIB
    # At 0.9 of the limit the times differ by 1/9 of the limit's time: 9x the latency bound.
    assert near * (1 / 0.9e9 - 1 / 1e9) >= LATENCY_FACTOR * 50e-6


@pytest.mark.parametrize("latency,link,limit", [
    (0.0, 0.1, 1.0),          # latency unknown
    (1e-3, 1.5, 1.0),         # not below the limit
    (1e-3, 0.95, 1.0),        # too close to tell apart at any size up to the first
])
def test_the_first_size_when_no_smaller_one_decides(latency, link, limit):
    assert deciding_size(MIB, latency, link, limit) == MIB


def test_deciding_sizes_stay_whole_floats_and_never_grow():
    for size in (6 * MIB + 12, 1000, 4):
        got = deciding_size(size, 1e-9, 0.001, 1.0)
        assert got % 4 == 0 and 4 <= got <= size


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("nan")])
def test_the_pair_budget_must_be_positive(seconds):
    from collscope.errors import UsageError
    from collscope.links.config import LinksConfig

    with pytest.raises(UsageError, match="--pair-budget"):
        LinksConfig(pair_budget_s=seconds)


def test_a_link_no_further_below_than_its_own_spread_keeps_the_first_size():
    # 0.45 against a 0.475 limit (5% below) with iterations spread 60% (a shared host): the
    # latency alone would allow 32 MiB, the noise it showed would not.
    assert deciding_size(64 * MIB, 324e-6, 0.4508, 0.4747) == 32 * MIB
    assert deciding_size(64 * MIB, 324e-6, 0.4508, 0.4747,
                         spread([0.110, 0.149, 0.147, 0.179, 0.165])) == 64 * MIB
    # Far below (a capped node), the same spread does not stop the shrink.
    assert deciding_size(64 * MIB, 324e-6, 0.024, 0.4747, 0.6) < 8 * MIB
    assert spread([2.8]) == 0.0
