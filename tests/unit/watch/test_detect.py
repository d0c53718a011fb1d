"""The straggler test on synthetic arrivals: a rank late from the first collective and one
turning late mid-run are named and released when they recover; two at once, an intermittent
one; jitter, random stalls and a rank a little late name nobody; in a TP x DP layout the rank
where the delay starts is named, not the peers that wait on it; a slow pair is one straggler.
The matcher joins repeated, late and sub-group arrivals."""

from __future__ import annotations

import random

from collscope.watch import detect, match
from collscope.watch.detect import Detector
from collscope.watch.match import Matched, Matcher

PERIOD_US = 100_000.0          # one collective every 100 ms


def _stream(n: int, ranks: int = 4, late: dict[int, float] | None = None,
            start: int = 40, stop: int | None = None, seed: int = 1,
            spike_every: int = 0, every: int = 1) -> list[Matched]:
    """``n`` collectives 100 ms apart; jitter 0-1.5 ms per rank; ``late`` rank -> extra ms
    from collective ``start`` (until ``stop``), in every ``every``-th collective; every
    ``spike_every``-th collective one random rank is 40 ms late (a descheduled process)."""
    rnd = random.Random(seed)
    out = []
    for seq in range(n):
        times = {r: seq * PERIOD_US + rnd.uniform(0, 1500) for r in range(ranks)}
        for r, ms in (late or {}).items():
            if seq >= start and (stop is None or seq < stop) and seq % every == 0:
                times[r] += ms * 1000
        if spike_every and seq % spike_every == 0:
            times[rnd.randrange(ranks)] += 40_000
        out.append(Matched("0", seq + 1, times))
    return out


def _run(stream: list[Matched], per_round: int = 1,
         clock_ms: dict[int, float] | None = None) -> list[detect.Change]:
    """Every change, feeding ``per_round`` collectives per round; each change's ``at`` is
    the index of the last collective fed. ``clock_ms``: the hosts' alignment spreads."""
    detector, changes = Detector(), []
    detector.clock_ms = clock_ms or {}
    for index in range(0, len(stream), per_round):
        detector.feed(stream[index:index + per_round])
        for change in detector.changes():
            change.at = index + per_round - 1          # type: ignore[attr-defined]
            changes.append(change)
    return changes


def _said(changes: list[detect.Change]) -> list[tuple[str, list[int], str]]:
    return [(c.state, c.straggler.ranks, c.shape) for c in changes]


def test_a_rank_30_ms_late_from_the_first_collective_is_named_as_persistent():
    changes = _run(_stream(200, late={2: 30}, start=0))
    assert _said(changes) == [("started", [2], "persistent")]
    v = changes[0].verdict
    assert changes[0].at < 12 and changes[0].p_rise is None      # type: ignore[attr-defined]
    # 30 ms of the others' wait every 100 ms: 300 ms per s, 30 % of the job's time.
    assert 280 < v.cost_ms_per_s < 320 and 28 < v.delay_ms < 32
    assert v.p < detect.ALPHA and v.hits >= detect.MIN_HITS


def test_an_onset_mid_run_is_named_within_12_collectives_and_released_within_a_window():
    window = int(detect.WINDOW_S * 1e6 / PERIOD_US)
    changes = _run(_stream(500, late={2: 30}, start=200, stop=300))
    assert _said(changes) == [("started", [2], "onset"), ("ended", [2], "onset")]
    started, ended = changes
    assert 200 <= started.at <= 212                               # type: ignore[attr-defined]
    assert 300 <= ended.at <= 300 + window                        # type: ignore[attr-defined]
    assert started.p_rise is not None and started.p_rise < detect.ALPHA
    assert started.baseline_ms < 1.5


def test_two_stragglers_at_once_are_both_named():
    changes = _run(_stream(300, ranks=8, late={3: 30, 5: 25}, start=100))
    assert sorted(c.straggler.ranks for c in changes) == [[3], [5]]
    assert {c.state for c in changes} == {"started"}


def test_a_rank_late_in_every_third_collective_is_intermittent():
    changes = _run(_stream(300, ranks=8, late={6: 40}, start=100, every=3))
    assert _said(changes) == [("started", [6], "intermittent")]
    assert 0.25 < changes[0].verdict.late_share < 0.45


def test_healthy_jitter_and_random_stalls_name_nobody():
    for seed in range(4):
        assert _run(_stream(400, seed=seed, spike_every=3), per_round=10) == []


def test_a_rank_always_slightly_late_costs_too_little_to_be_named():
    """1 ms late in every collective of 100 ms: 1 % of the job's time, below MIN_SHARE."""
    assert _run(_stream(300, late={3: 1}, start=0), per_round=10) == []


def test_delays_within_the_clock_alignment_across_hosts_name_nobody():
    """Two hosts of two ranks, the second's clock aligned 4 ms wrong in a job of 100 ms steps
    (4 % of its time): with the exchange's 2.5 ms spread known, nobody; unknown, a straggler
    the alignment made. A 30 ms rank on that host is still named."""
    skewed = _stream(300, late={2: 4, 3: 4}, start=0)
    spread = {2: 2.5, 3: 2.5}
    assert _run(skewed, per_round=10) != []
    assert _run(skewed, per_round=10, clock_ms=spread) == []
    slow = _stream(300, late={2: 4, 3: 34}, start=0)
    assert [c.straggler.ranks for c in _run(slow, per_round=10, clock_ms=spread)] == [[3]]


def _tp_dp(steps: int, tp_late: dict[int, float], link_ms: float = 0.0,
           seed: int = 3) -> list[Matched]:
    """A 2 x 2 TP x DP job: TP groups 'tp0' {0, 1}, 'tp1' {2, 3}, DP groups 'dp0' {0, 2},
    'dp1' {1, 3}. Per step a TP collective (``tp_late``: rank -> ms late into it;
    ``link_ms``: tp0's collective takes that much longer), then the DP one, entered when
    the TP one ended."""
    rnd = random.Random(seed)
    out = []
    for step in range(steps):
        start = step * PERIOD_US
        ready = {r: start + rnd.uniform(0, 800) + tp_late.get(r, 0.0) * 1000 for r in range(4)}
        for name, members in (("tp0", (0, 1)), ("tp1", (2, 3))):
            out.append(Matched(name, step + 1, {r: ready[r] for r in members}))
            end = max(ready[r] for r in members) + 2000 + (link_ms * 1000 if name == "tp0"
                                                           else 0)
            for r in members:
                ready[r] = end + rnd.uniform(0, 800)
        for name, members in (("dp0", (0, 2)), ("dp1", (1, 3))):
            out.append(Matched(name, step + 1, {r: ready[r] for r in members}))
    return out


def test_tp_dp_names_the_rank_where_the_delay_starts_not_its_waiting_peer():
    changes = _run(_tp_dp(200, {1: 30}), per_round=40)
    assert _said(changes) == [("started", [1], "persistent")]
    s = changes[0].straggler
    assert s.kind == "rank" and s.followers == [0]
    assert s.groups == ["dp0", "dp1", "tp0"]


def test_a_slow_link_between_two_ranks_is_one_pair():
    changes = _run(_tp_dp(200, {}, link_ms=30), per_round=40)
    assert _said(changes) == [("started", [0, 1], "pair")]
    assert changes[0].straggler.link == "tp0"


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
    assert matcher.close(3 + match.STALE_ROUNDS + 1) == [] and matcher.dropped == 1


def test_matcher_applies_clock_offsets_and_learns_subgroup_members():
    matcher = Matcher(range(4))
    # rank 3's host clock runs 5 ms ahead: without the offset it would look 5 ms late.
    matcher.add(2, {"0": [(1, 1000)], "1": [(1, 1000)]}, 0.0, 1)
    matcher.add(3, {"0": [(1, 6000)], "1": [(1, 6050)]}, 5000.0, 1)
    matcher.add(0, {"0": [(1, 1000)]}, 0.0, 1)
    matcher.add(1, {"0": [(1, 1020)]}, 0.0, 1)
    (default,) = matcher.close(1)                          # group 1 not settled yet
    assert default.lateness_ms(3) == 0.0
    (sub,) = matcher.close(1 + match.SETTLE_ROUNDS)
    assert sub.group == "1" and set(sub.arrivals_us) == {2, 3}
    assert abs(sub.lateness_ms(3) - 0.05) < 1e-9


def test_the_finding_and_its_live_line_carry_shape_groups_cost_and_the_deciding_test():
    from collscope.watch.aggregate import finding

    changes = _run(_tp_dp(200, {1: 30}), per_round=40)
    members = {"tp0": {0, 1}, "tp1": {2, 3}, "dp0": {0, 2}, "dp1": {1, 3}}
    record = finding(changes[0], 1.0, lambda r: f"node{r}", lambda r: 0, members)
    v = changes[0].verdict
    assert (record.shape, record.ranks, record.groups) == ("persistent", [1],
                                                           ["dp0", "dp1", "tp0"])
    assert record.cost_ms_per_s == round(changes[0].straggler.cost_ms_per_s, 3) > 0
    assert record.p_last == v.p < detect.ALPHA
    assert record.test.startswith(f"binomial p={v.p:.2g} (Bonferroni x {v.members} ranks")
    # the line printed live: shape, who, groups, cost and the binomial that decided
    assert record.title.startswith("straggler (persistent): rank 1 (node1) in group(s) "
                                   "dp0, dp1, tp0: costs the others ")
    assert "% of the job's time)" in record.title
    assert f"(binomial p={v.p:.2g} against its {v.members - 1} peers)" in record.title
    assert "delays rank(s) 0" in record.title
