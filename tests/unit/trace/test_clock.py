"""Clock alignment across ranks (pure): offsets recovered from the ends of synchronising
collectives, the straggler verdict on aligned clocks, and when lateness is not decidable."""

from __future__ import annotations

import random

import pytest

from collscope.config_flags import ConfigError
from collscope.records.trace import TraceStepRecord
from collscope.trace.across import match
from collscope.trace.analyze import check_overlap
from collscope.trace.calls import CommCall
from collscope.trace.clock import RankOffset, decide
from collscope.trace.config import TraceConfig
from collscope.trace.events import TraceInputError
from collscope.trace.rank import RankTrace

RANKS = 4
STEPS = 12
CALLS_PER_STEP = 3
# Each rank's clock minus rank 0's (true, microseconds): hosts without PTP.
OFFSETS = {0: 0.0, 1: 3e6, 2: 1700.0, 3: -250e3}
LATE_RANK, LATE_US = 2, 2000.0


def job(offsets: dict[int, float], late_us: float = LATE_US, end_jitter_us: float = 10.0,
        hosts: list[str | None] | None = None, broadcast_root_early: bool = False,
        ) -> list[RankTrace]:
    """4 ranks, 12 steps of 3 all-reduces. True time: every rank is ready within 20 us of the
    others, rank 2 ``late_us`` later; the call ends when the last rank is ready plus 500 us,
    each rank's end off by up to ``end_jitter_us``. Each rank records its times on its clock
    (true + its offset)."""
    rng = random.Random(7)
    calls: dict[int, list[CommCall]] = {r: [] for r in range(RANKS)}
    seq = 0
    for step in range(STEPS):
        for i in range(CALLS_PER_STEP):
            base = step * 100_000.0 + i * 10_000.0
            ready = {r: base + rng.uniform(0, 20) + (late_us if r == LATE_RANK else 0.0)
                     for r in range(RANKS)}
            end = max(ready.values()) + 500.0
            for r in range(RANKS):
                finish = end + rng.uniform(-end_jitter_us, end_jitter_us)
                calls[r].append(CommCall("all_reduce", "float", 4 << 20, "0", RANKS, seq,
                                         ready[r] + offsets[r], finish - ready[r], step=step))
            seq += 1
        if broadcast_root_early:
            # A broadcast from rank 0 ends on the root long before the others: not used.
            start = step * 100_000.0 + 50_000.0
            for r in range(RANKS):
                calls[r].append(CommCall("broadcast", "float", 1 << 20, "0", RANKS, seq,
                                         start + offsets[r], 50.0 if r == 0 else 5000.0,
                                         step=step))
            seq += 1
    names = hosts if hosts is not None else [f"node{r}" for r in range(RANKS)]
    return [RankTrace(path=f"r{r}", rank=r, world_size=RANKS, backend="nccl", job=(RANKS,),
                      timing="gpu kernels", calls=calls[r],
                      steps=[TraceStepRecord(r, s, 100.0, 50.0, 10.0, 5.0, 50.0, 0.0)
                             for s in range(STEPS)],
                      window="w", comm_ms=1, compute_ms=1, exposed_comm_ms=0.5,
                      overlap_percent=50, shared_stream_comm_ms=0,
                      first_ts=offsets[r], last_ts=STEPS * 100_000.0 + offsets[r],
                      host=names[r]) for r in range(RANKS)]


def test_offsets_are_recovered_and_the_planted_rank_is_the_straggler():
    across = match(job(OFFSETS), "auto")
    clock = across.clock
    assert clock is not None and clock.applied and clock.reference == 0
    assert "4 hosts" in clock.reason
    found = {o.rank: o for o in clock.offsets}
    for r, offset in OFFSETS.items():
        assert found[r].offset_us == pytest.approx(offset, abs=20.0)   # end jitter <= 10 us
        assert found[r].ci_low_us <= found[r].offset_us <= found[r].ci_high_us
        assert found[r].spread_us < 20.0 and found[r].calls == STEPS * CALLS_PER_STEP
    assert clock.decidable
    assert {m.late_rank for m in across.matched} == {LATE_RANK}
    assert across.straggler is not None and across.straggler.rank == LATE_RANK
    assert (across.straggler.late_steps, across.straggler.steps) == (STEPS, STEPS)
    # On aligned clocks rank 2's delay is the planted 2 ms (less the ready jitter and the
    # offset error), not 2 ms + its clock's 1.7 ms.
    assert all(abs(m.delay_us - LATE_US) < 60.0 for m in across.matched)
    assert "aligned to rank 0" in across.method


def test_without_alignment_the_clock_offset_names_the_wrong_rank():
    # The failure mode the alignment fixes: rank 1's clock is 3 s ahead, so on the traces'
    # own clocks it is "ready" 3 s after the others for every call and is named the
    # straggler, while the planted rank 2 looks on time.
    across = match(job(OFFSETS), "off")
    assert across.clock is not None and not across.clock.applied
    assert "--clock-align off" in across.clock.reason and "4 hosts" in across.clock.reason
    assert across.straggler is not None and across.straggler.rank == 1
    assert across.ranks[LATE_RANK].late_calls == 0
    assert "the traces' own clocks" in across.method


def test_residual_spread_larger_than_the_skew_makes_lateness_undecidable():
    # The aligned ends disagree by +-5 ms: a 1 ms lateness cannot be told from the clocks'
    # uncertainty, so no straggler is named even though rank 2 is late in every step.
    across = match(job(OFFSETS, late_us=1000.0, end_jitter_us=5000.0), "auto")
    clock = across.clock
    assert clock is not None and clock.applied and not clock.decidable
    assert clock.residual_spread_us is not None and clock.residual_spread_us > 1000.0 / 3
    assert across.straggler is None
    assert across.straggler_test.startswith("lateness is not decidable on these traces")
    assert across.straggler_test == clock.decision
    # The same traces with a 50 ms lateness are decidable again.
    across = match(job(OFFSETS, late_us=50_000.0, end_jitter_us=5000.0), "auto")
    assert across.clock is not None and across.clock.decidable
    assert across.straggler is not None and across.straggler.rank == LATE_RANK


def test_auto_keeps_one_hosts_clock_and_aligns_unnamed_hosts_only_when_clear():
    one_host = match(job(OFFSETS, hosts=["vm"] * RANKS), "auto").clock
    assert one_host is not None and not one_host.applied
    assert "one clock" in one_host.reason and "disagree systematically" in one_host.reason
    unnamed = match(job(OFFSETS, hosts=[None] * RANKS), "auto").clock
    assert unnamed is not None and unnamed.applied and "name no host" in unnamed.reason
    same_clock = match(job({r: 0.0 for r in range(RANKS)}, hosts=[None] * RANKS), "auto")
    assert same_clock.clock is not None and not same_clock.clock.applied
    assert same_clock.straggler is not None and same_clock.straggler.rank == LATE_RANK
    forced = match(job(OFFSETS, hosts=["vm"] * RANKS), "on")
    assert forced.clock is not None and forced.clock.applied
    assert forced.straggler is not None and forced.straggler.rank == LATE_RANK


@pytest.mark.parametrize(("offset", "spread", "applied"), [
    (3e6, 5.0, True), (150.0, 10.0, True), (150.0, 20.0, False), (50.0, 1.0, False)])
def test_auto_margin_for_traces_that_name_no_host(offset, spread, applied):
    offsets = [RankOffset(0, 0.0, 0.0, 0.0, 0.95, 0.0, 10),
               RankOffset(1, offset, offset, offset, 0.95, spread, 10)]
    assert decide("auto", [None, None], offsets)[0] is applied


def test_rooted_collectives_are_not_used_and_too_few_calls_give_no_estimate():
    with_broadcast = match(job(OFFSETS, broadcast_root_early=True), "auto").clock
    assert with_broadcast is not None
    assert all(o.calls == STEPS * CALLS_PER_STEP for o in with_broadcast.offsets)
    assert with_broadcast.offsets[1].offset_us == pytest.approx(3e6, abs=20.0)
    traces = job(OFFSETS)
    for trace in traces:
        trace.calls = [c for c in trace.calls if c.seq is not None and c.seq < 2]
    clock = match(traces, "on").clock
    assert clock is not None and not clock.applied and clock.offsets == []
    assert clock.reason.startswith("--clock-align on, but offsets not estimable")


def test_time_overlap_is_checked_on_aligned_clocks():
    offsets = {0: 0.0, 1: 5e6, 2: 0.0, 3: 0.0}      # 5 s apart: longer than the 1.2 s traces
    traces = job(offsets)
    check_overlap(traces, match(traces, "auto"))
    with pytest.raises(TraceInputError, match="r1: its events do not overlap in time.*"
                                              "--clock-align on"):
        check_overlap(traces, match(traces, "off"))


def test_clock_align_flag_is_validated():
    with pytest.raises(ConfigError,
                       match="--clock-align: 'maybe' is not accepted; use auto, on, off"):
        TraceConfig(paths=["t"], clock_align="maybe")
