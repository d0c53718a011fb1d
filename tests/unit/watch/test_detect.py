"""The straggler test on synthetic arrivals: a planted fail-slow rank is named within a window
of its start and released when it recovers; jitter, random stalls and a rank that is always
a little late name nobody; the matcher joins repeated, late and sub-group arrivals."""

from __future__ import annotations

import random

from collscope.watch import detect
from collscope.watch.detect import Detector, Matched, Matcher


def _stream(n: int, ranks: int = 4, late: dict[int, float] | None = None,
            start: int = 40, stop: int | None = None, seed: int = 1,
            spike_every: int = 0) -> list[Matched]:
    """``n`` collectives 80 ms apart; jitter 0-1.5 ms per rank; ``late`` rank -> extra ms
    from collective ``start`` (until ``stop``); every ``spike_every``-th collective one
    random rank is 40 ms late (a descheduled process)."""
    rnd = random.Random(seed)
    out = []
    for seq in range(n):
        base = seq * 80_000.0
        times = {r: base + rnd.uniform(0, 1500) for r in range(ranks)}
        for r, ms in (late or {}).items():
            if seq >= start and (stop is None or seq < stop):
                times[r] += ms * 1000
        if spike_every and seq % spike_every == 0:
            times[rnd.randrange(ranks)] += 40_000
        out.append(Matched("0", seq + 1, times))
    return out


def _run(stream: list[Matched]) -> list[tuple[int, str, int]]:
    """(collective index, state, rank) of every change, feeding one collective at a time."""
    detector, changes = Detector(), []
    for index, matched in enumerate(stream):
        detector.feed([matched])
        changes += [(index, c.state, c.verdict.rank) for c in detector.changes()]
    return changes


def test_a_rank_30_ms_late_from_collective_40_is_named_within_12_and_released():
    changes = _run(_stream(120, late={2: 30}, start=40, stop=80))
    started = [c for c in changes if c[1] == "started"]
    ended = [c for c in changes if c[1] == "ended"]
    assert [c[2] for c in started] == [2] and [c[2] for c in ended] == [2]
    assert 40 <= started[0][0] <= 40 + detect.WINDOW
    assert 80 <= ended[0][0] <= 80 + detect.WINDOW


def test_the_verdict_carries_the_lateness_baseline_and_the_wait_it_caused():
    detector = Detector()
    detector.feed(_stream(2 * detect.WINDOW, late={1: 30}, start=detect.WINDOW))
    (change,) = detector.changes()
    v = change.verdict
    assert v.rank == 1 and 28 < v.lateness_ms < 32 and v.baseline_ms < 1.5
    assert v.hits == detect.WINDOW and v.p_last < detect.ALPHA and v.p_rise < detect.ALPHA
    # Each of the 3 others waited ~30 ms in each of the window's collectives.
    assert 3 * 28 * detect.WINDOW < v.wait_caused_ms < 3 * 32 * detect.WINDOW


def test_healthy_jitter_and_random_stalls_name_nobody():
    for seed in range(6):
        assert _run(_stream(150, seed=seed, spike_every=3)) == []


def test_a_rank_always_slightly_late_is_not_fail_slow():
    """Late in every collective, but by 2 ms from the start: no rise, below the floor."""
    assert _run(_stream(100, late={3: 2}, start=0)) == []


def test_two_ranks_one_late_from_the_start_of_the_window_is_named():
    changes = _run(_stream(80, ranks=2, late={1: 30}, start=30))
    assert [(s, r) for _, s, r in changes] == [("started", 1)]


def test_matcher_joins_repeats_and_drops_what_never_completes():
    matcher = Matcher(range(3))
    matcher.add(0, {"0": [(1, 100), (2, 200)]}, 0.0, 1)
    matcher.add(1, {"0": [(1, 130), (2, 210)]}, 0.0, 1)
    assert matcher.close(1) == []                          # rank 2 not there yet
    matcher.add(2, {"0": [(1, 160), (2, 260)]}, 0.0, 2)
    matcher.add(0, {"0": [(1, 100), (2, 200)]}, 0.0, 2)    # the previous summary again
    done = matcher.close(2)
    assert [(m.seq, m.last, m.lateness_ms(2)) for m in done] == [(1, 2, 0.06), (2, 2, 0.06)]
    matcher.add(1, {"0": [(2, 210)]}, 0.0, 3)              # a repeat after the match
    matcher.add(0, {"0": [(3, 300)]}, 0.0, 3)              # never seen elsewhere
    assert matcher.close(3 + detect.STALE_ROUNDS + 1) == [] and matcher.dropped == 1


def test_matcher_applies_clock_offsets_and_learns_subgroup_members():
    matcher = Matcher(range(4))
    # rank 3's host clock runs 5 ms ahead: without the offset it would look 5 ms late.
    matcher.add(2, {"0": [(1, 1000)], "1": [(1, 1000)]}, 0.0, 1)
    matcher.add(3, {"0": [(1, 6000)], "1": [(1, 6050)]}, 5000.0, 1)
    matcher.add(0, {"0": [(1, 1000)]}, 0.0, 1)
    matcher.add(1, {"0": [(1, 1020)]}, 0.0, 1)
    (default,) = matcher.close(1)                          # group 1 not settled yet
    assert default.lateness_ms(3) == 0.0
    (sub,) = matcher.close(1 + detect.SETTLE_ROUNDS)
    assert sub.group == "1" and set(sub.arrivals_us) == {2, 3}
    assert abs(sub.lateness_ms(3) - 0.05) < 1e-9
