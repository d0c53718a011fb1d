"""Clock drift and sub-group chaining (pure): offsets and drifts recovered from synthetic ends
with known clocks, the rule that applies a drift only when established, chained offsets over
tensor-/data-parallel groups, and ranks no chain links to the reference."""

from __future__ import annotations

import random
import statistics
from typing import Any

import pytest

from collscope.records.trace import TraceStepRecord
from collscope.trace.across import match
from collscope.trace.analyze import TraceResult, check_overlap
from collscope.trace.calls import CommCall
from collscope.trace.clock import METHOD_CHAINED, align
from collscope.trace.offsets import RankOffset, estimate, solve_graph
from collscope.trace.rank import RankTrace
from collscope.trace.report import _clock_lines

T0 = 1.7e15          # trace times are epoch microseconds: the drift's origin must not lose bits


def clock(rank: int, true_us: float, offsets: dict[int, float], drifts: dict[int, float],
          ) -> float:
    """What rank's clock reads at true time ``true_us``: offset + drift (ppm) x (t - T0)."""
    return true_us + offsets.get(rank, 0.0) + drifts.get(rank, 0.0) * 1e-6 * (true_us - T0)


def synthetic_ends(groups: list[list[int]], calls_per_group: int, span_us: float,
                   offsets: dict[int, float], drifts: dict[int, float], jitter_us: float,
                   seed: int = 3) -> list[dict[int, float]]:
    """Per group, ``calls_per_group`` synchronising calls spread evenly over ``span_us``, each
    ending at one true instant, every rank's end off by up to ``jitter_us``."""
    rng = random.Random(seed)
    ends = []
    for g, group in enumerate(groups):
        for k in range(calls_per_group):
            true = T0 + (k + g / len(groups)) * span_us / calls_per_group
            ends.append({r: clock(r, true + rng.uniform(-jitter_us, jitter_us), offsets, drifts)
                         for r in group})
    return ends


def expected_offset(rank: int, origin_us: float, offsets: dict[int, float],
                    drifts: dict[int, float]) -> float:
    """The rank's clock minus the reference's (rank 0, no drift) at reference time origin."""
    return offsets.get(rank, 0.0) + drifts.get(rank, 0.0) * 1e-6 * (origin_us - T0)


OFFSETS = {1: 3e6, 2: 1700.0, 3: -250e3}
DRIFTS = {1: 50.0, 3: -20.0}                 # ppm: NTP-disciplined hosts, tens of ppm


def test_drift_is_recovered_and_applied_only_where_established():
    # 4 ranks, 200 all-reduces over 20 s, ends within +-10 us: rank 1 runs 50 ppm fast
    # (1 ms over the trace), rank 3 20 ppm slow, rank 2 only offset.
    found = estimate(synthetic_ends([[0, 1, 2, 3]], 200, 20e6, OFFSETS, DRIFTS, 10.0),
                     [0, 1, 2, 3])
    assert not found.chained and found.unreachable == []
    by_rank = {o.rank: o for o in found.offsets}
    for r in (1, 3):
        o = by_rank[r]
        assert o.drift_applied and o.drift_ppm == pytest.approx(DRIFTS[r], abs=0.5)
        assert o.drift_ci_ppm[0] <= o.drift_ppm <= o.drift_ci_ppm[1]
        assert o.drift_decision.startswith("applied: CI")
        assert o.offset_us == pytest.approx(expected_offset(r, o.origin_us, OFFSETS, DRIFTS),
                                            abs=5.0)
        # The spread is the drift model's: the end jitter (+-10 us each end), not the
        # 1 ms / 0.4 ms trend a constant offset leaves.
        assert o.spread_us < 10.0
    assert not by_rank[2].drift_applied and by_rank[2].drift_ppm == pytest.approx(0, abs=0.5)
    assert by_rank[2].offset_us == pytest.approx(OFFSETS[2], abs=5.0)
    assert by_rank[0].offset_us == 0.0 and by_rank[0].spread_us == 0.0
    assert found.offsets[0].origin_us == pytest.approx(T0, abs=20.0)


def test_without_drift_the_offsets_are_exactly_the_constant_medians():
    ends = synthetic_ends([[0, 1, 2, 3]], 60, 5e6, OFFSETS, {}, 10.0)
    found = estimate(ends, [0, 1, 2, 3])
    for o in found.offsets:
        diffs = [call[o.rank] - call[0] for call in ends]
        assert not o.drift_applied
        assert o.offset_us == statistics.median(diffs)          # exactly: today's estimate
        assert o.spread_us == statistics.median(abs(d - o.offset_us) for d in diffs)
        assert o.shift_us(T0 + 4e6) == o.offset_us              # constant in time


def test_a_significant_drift_too_small_to_matter_is_not_applied():
    # 2 ppm over 2 s moves the ends by 4 us, under their ~6 us spread: the slope's CI
    # excludes 0 (2000 calls), yet applying it changes the aligned times by less than the
    # spread, so the constant offset is kept.
    found = estimate(synthetic_ends([[0, 1]], 2000, 2e6, {1: 500.0}, {1: 2.0}, 10.0), [0, 1])
    o = found.offsets[1]
    assert o.drift_ppm is not None and o.drift_ci_ppm[0] > 0
    assert not o.drift_applied and o.drift_decision.startswith("not applied: CI")
    assert "excludes 0" in o.drift_decision and "<= the residual spread" in o.drift_decision


def test_time_dependent_shift_puts_rank_times_on_the_reference_clock():
    o = RankOffset(1, 1000.0, 999.0, 1001.0, 0.95, 1.0, 10, drift_ppm=100.0,
                   drift_ci_ppm=[90.0, 110.0], drift_applied=True, origin_us=T0)
    for true in (T0, T0 + 1e6, T0 + 10e6):
        own = true + 1000.0 + 100e-6 * (true - T0)       # what rank 1's clock reads
        assert own - o.shift_us(own) == pytest.approx(true, abs=1e-3)
    assert o.shift_us(T0 + 1000.0) == pytest.approx(1000.0)
    assert o.shift_us(T0 + 1000.0 + 10e6 * (1 + 1e-4)) == pytest.approx(2000.0, abs=1e-3)


RANKS, STEPS, CALLS_PER_STEP, STEP_US = 4, 40, 3, 250_000.0      # 10 s of trace


def drifting_job(offsets: dict[int, float], drifts: dict[int, float], late_rank: int,
                 late_us: float, groups: list[list[int]] | None = None, seq: bool = True,
                 ranks: int = RANKS) -> list[RankTrace]:
    """``ranks`` ranks on their own hosts, STEPS steps of CALLS_PER_STEP all-reduces per group
    (default: one group of every rank); ``late_rank`` ready ``late_us`` after the others;
    each call ends 500 us after the last rank is ready (+-10 us per rank); every time stamped
    on its rank's (offset, drifting) clock."""
    rng = random.Random(11)
    groups = groups or [list(range(ranks))]
    calls: dict[int, list[CommCall]] = {r: [] for r in range(ranks)}
    for g, group in enumerate(groups):
        for step in range(STEPS):
            for i in range(CALLS_PER_STEP):
                base = T0 + step * STEP_US + i * 20_000.0 + g * 2_000.0
                ready = {r: base + rng.uniform(0, 20) + (late_us if r == late_rank else 0.0)
                         for r in group}
                end = max(ready.values()) + 500.0
                for r in group:
                    start = clock(r, ready[r], offsets, drifts)
                    finish = clock(r, end + rng.uniform(-10, 10), offsets, drifts)
                    calls[r].append(CommCall(
                        "all_reduce", "float", 4 << 20, f"g{g}", len(group),
                        step * CALLS_PER_STEP + i if seq else None, start, finish - start,
                        step=step))
    return [RankTrace(path=f"r{r}", rank=r, world_size=ranks, backend="nccl", job=(ranks,),
                      timing="gpu kernels", calls=sorted(calls[r], key=lambda c: c.start_us),
                      steps=[TraceStepRecord(r, s, 250.0, 50.0, 10.0, 5.0, 50.0, 0.0)
                             for s in range(STEPS)],
                      window="w", comm_ms=1, compute_ms=1, exposed_comm_ms=0.5,
                      overlap_percent=50, shared_stream_comm_ms=0,
                      first_ts=clock(r, T0, offsets, drifts),
                      last_ts=clock(r, T0 + STEPS * STEP_US, offsets, drifts),
                      host=f"node{r}") for r in range(ranks)]


def test_aligned_starts_use_the_drift_and_lateness_stays_decidable(monkeypatch):
    # Rank 1 drifts 200 ppm: 2 ms over the 10 s trace. A constant offset would leave a
    # +-1 ms trend (spread ~500 us: a 1 ms lateness within 3 x it, not decidable, and rank 1
    # "late" wherever its clock runs ahead); the drift model aligns the ends to ~10 us.
    offsets, drifts = {1: 3e6, 2: 1700.0, 3: -250e3}, {1: 200.0}
    traces = drifting_job(offsets, drifts, late_rank=2, late_us=1000.0)
    across = match(traces, "auto")
    clock_ = across.clock
    assert clock_ is not None and clock_.applied and clock_.decidable
    rank1 = {o.rank: o for o in clock_.offsets}[1]
    assert rank1.drift_applied and rank1.drift_ppm == pytest.approx(200.0, abs=1.0)
    assert rank1.spread_us < 15.0
    constant = statistics.median(m.ends_us[1] - m.ends_us[0] for m in across.matched)
    trend = statistics.median(abs(m.ends_us[1] - m.ends_us[0] - constant)
                              for m in across.matched)
    assert trend > 300.0                        # what the constant model's spread would be
    assert {m.late_rank for m in across.matched} == {2}
    assert all(abs(m.delay_us - 1000.0) < 60.0 for m in across.matched)
    assert across.straggler is not None and across.straggler.rank == 2
    check_overlap(traces, across)
    record = clock_.to_dict()
    assert [d["rank"] for d in record["drifts"]] == [1]
    assert record["drift_origin_us"] == pytest.approx(rank1.origin_us)
    assert "Theil-Sen" in str(record["method"])
    (rank_record,) = [r for r in TraceResult(traces, [], across, [], None).rank_records()
                      if r.rank == 1]
    assert rank_record.clock_drift_applied
    assert rank_record.clock_drift_ppm == pytest.approx(200.0, abs=1.0)
    lines = printed(clock_)
    assert any(line.startswith("#   rank 1: ") and " at t0 = " in line and "drift +200 ppm "
               "(applied: CI" in line for line in lines), lines
    assert any(line.startswith("#   rank 2: ") and "(not applied: " in line
               for line in lines), lines
    # The failure mode the drift term fixes: with constant offsets only, rank 1's trend is
    # its spread (~500 us MAD) and the 1 ms lateness is within 3 x it: not decidable.
    monkeypatch.setattr("collscope.trace.offsets._solve_slopes", lambda *args: {})
    constant = match(traces, "auto")
    assert constant.clock is not None and not constant.clock.decidable
    assert constant.clock.residual_spread_us == pytest.approx(500.0, rel=0.1)
    assert constant.straggler is None


def printed(clock_: Any) -> list[str]:
    class Console:
        lines: list[str] = []

        def print(self, text: str) -> None:
            self.lines.append(text)

    console = Console()
    _clock_lines(console, clock_)
    return console.lines


# 8 ranks: tensor-parallel pairs and data-parallel groups; no group spans every rank.
TP_DP = [[0, 1], [2, 3], [4, 5], [6, 7], [0, 2, 4, 6], [1, 3, 5, 7]]
OFFSETS_8 = {1: 12.0, 2: 2e6, 3: 2e6 + 30.0, 4: -7e5, 5: -7e5 - 40.0, 6: 4500.0, 7: 4520.0}


def test_subgroup_offsets_are_chained_through_the_graph_of_groups():
    found = estimate(synthetic_ends(TP_DP, 50, 5e6, OFFSETS_8, {}, 10.0), list(range(8)))
    assert found.chained and found.unreachable == []
    assert [o.rank for o in found.offsets] == list(range(8))
    for o in found.offsets:
        assert o.offset_us == pytest.approx(OFFSETS_8.get(o.rank, 0.0), abs=6.0)
        assert o.ci_low_us <= o.offset_us <= o.ci_high_us and o.ci_confidence == 0.95
        assert not o.drift_applied and o.spread_us < 15.0
    # Rank 7 shares no call with rank 0: its offset comes through 1 (or 6) only.
    assert found.offsets[7].calls == 100


def test_subgroup_chaining_also_recovers_a_drift():
    found = estimate(synthetic_ends(TP_DP, 100, 20e6, OFFSETS_8, {5: -30.0}, 10.0),
                     list(range(8)))
    by_rank = {o.rank: o for o in found.offsets}
    assert by_rank[5].drift_applied and by_rank[5].drift_ppm == pytest.approx(-30.0, abs=1.0)
    assert [r for r, o in by_rank.items() if o.drift_applied] == [5]
    assert by_rank[5].offset_us == pytest.approx(
        expected_offset(5, by_rank[5].origin_us, OFFSETS_8, {5: -30.0}), abs=8.0)


@pytest.mark.parametrize("seq", [True, False])
def test_subgroup_traces_are_aligned_by_match(seq):
    # Through across.match: calls of groups that never span every rank, keyed by Seq, or
    # without it matched per stream against the lowest rank of the group.
    traces = drifting_job(OFFSETS_8, {}, late_rank=-1, late_us=0.0, groups=TP_DP, seq=seq,
                          ranks=8)
    across = match(traces, "auto")
    clock_ = across.clock
    assert clock_ is not None and clock_.applied and clock_.chained
    assert clock_.method == METHOD_CHAINED and clock_.to_dict()["chained_through_subgroups"]
    for o in clock_.offsets:
        assert o.offset_us == pytest.approx(OFFSETS_8.get(o.rank, 0.0), abs=10.0)
    assert across.matched == []                 # no call is on every rank: lateness has none
    if not seq:
        assert any(found.reference == 1 and found.rank == 7 for found in across.shifts)
    check_overlap(traces, across)


def test_a_rank_no_chain_links_to_the_reference_is_not_estimable():
    # Groups {0,1} and {2,3} only: nothing ties ranks 2 and 3 to rank 0.
    ends = synthetic_ends([[0, 1], [2, 3]], 20, 1e6, OFFSETS, {}, 10.0)
    found = estimate(ends, [0, 1, 2, 3])
    assert found.chained and found.unreachable == [2, 3]
    assert [o.rank for o in found.offsets] == [0, 1]
    assert found.offsets[1].offset_us == pytest.approx(OFFSETS[1], abs=6.0)
    for mode in ("auto", "on"):
        clock_ = align(mode, [f"node{r}" for r in range(4)], ends, [0, 1, 2, 3])
        assert not clock_.applied and clock_.not_estimable == [2, 3]
        assert "offsets not estimable for rank(s) 2, 3: no chain of synchronising calls" \
            in clock_.reason
    assert align("on", [None] * 4, ends, [0, 1, 2, 3]).reason.startswith("--clock-align on, but")


@pytest.mark.parametrize(("edges", "expected"), [
    # A triangle that agrees exactly.
    ([(0, 1, 10.0, 1.0), (1, 2, 5.0, 1.0), (0, 2, 15.0, 1.0)], {1: 10.0, 2: 15.0}),
    # Disagreeing paths: the precise edge (se 0.1) wins over the 2-edge path (se 10 each).
    ([(0, 2, 100.0, 0.1), (0, 1, 0.0, 10.0), (1, 2, 0.0, 10.0)], {1: 50.0, 2: 100.0}),
])
def test_weighted_least_squares_over_the_graph(edges, expected):
    solved = solve_graph(edges, [0, 1, 2])
    assert solved[0] == (0.0, 0.0)
    for r, value in expected.items():
        assert solved[r][0] == pytest.approx(value, abs=0.05)
        assert solved[r][1] > 0
