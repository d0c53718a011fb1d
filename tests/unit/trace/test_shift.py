"""Matching calls across ranks whose traces start at different calls: each rank's shift, chosen
by the ends of synchronising collectives; exact (group, Seq) matching where every rank has it;
refusal when no shift is clearly better; the real sampled-128 pair."""

from __future__ import annotations

import random

import pytest

from collscope.trace.across import match
from collscope.trace.analyze import read_rank
from collscope.trace.calls import CommCall
from collscope.trace.rank import RankTrace
from collscope.trace.shift import SHIFT_BOUND, find_shifts, stream_key
from tests.conftest import fixture_path

STEPS = 12
LATE_RANK, LATE_US = 0, 2000.0


def job(skip: int, seq: bool, end_jitter_us: float = 10.0, drop: tuple[int, ...] = (),
        steps: bool = True, host: str | None = "h", spacing_us: tuple[float, float] = (8000,
                                                                                 12000),
        ) -> list[RankTrace]:
    """2 ranks, one all-reduce per ProfilerStep (``steps``: the calls know their step), spaced
    by ``spacing_us`` (irregular by default). True time: rank 0 ready 2 ms after rank 1 for
    every call (the planted late rank); the call ends when the last rank is ready + 500 us,
    each rank's end off by up to ``end_jitter_us``. Rank 1's trace starts ``skip`` calls later
    (its window misses the first ones) and misses the calls in ``drop``."""
    rng = random.Random(3)
    calls: dict[int, list[CommCall]] = {0: [], 1: []}
    base = 0.0
    for step in range(STEPS):
        base += rng.uniform(*spacing_us)
        ready = {0: base + LATE_US + rng.uniform(0, 20), 1: base + rng.uniform(0, 20)}
        end = max(ready.values()) + 500.0
        for r in (0, 1):
            if r == 1 and (step < skip or step in drop):
                continue
            finish = end + rng.uniform(-end_jitter_us, end_jitter_us)
            calls[r].append(CommCall("all_reduce", "float", 4 << 20, "0", 2,
                                     step if seq else None, ready[r], finish - ready[r],
                                     step=step if steps else None))
    return [RankTrace(path=f"r{r}", rank=r, world_size=2, backend="nccl", job=(2,),
                      timing="gpu kernels", calls=calls[r], steps=[], window="w", comm_ms=1,
                      compute_ms=1, exposed_comm_ms=0.5, overlap_percent=50,
                      shared_stream_comm_ms=0, first_ts=0, last_ts=2e5, host=host)
            for r in (0, 1)]


def naive_late_ranks(traces: list[RankTrace]) -> set[int]:
    """The old matching: the k-th call on rank 0 is the k-th call on rank 1."""
    first, second = traces[0].calls, traces[1].calls
    return {0 if a.ready_us > b.ready_us else 1 for a, b in zip(first, second)}


@pytest.mark.parametrize("skip", [1, 2])
@pytest.mark.parametrize(("steps", "host"), [(True, "h"), (False, "h"), (False, None)])
def test_a_trace_starting_later_is_shifted_and_the_planted_rank_found(skip, steps, host):
    # Steps known: a shift pairing different ProfilerSteps is out, the ends confirm the one
    # left. Without steps the ends alone decide: on one host's clock (offset 0), and on
    # unnamed hosts (offset searched too; the irregular spacing tells a shift from an offset).
    traces = job(skip, seq=False, steps=steps, host=host)
    # The failure mode: paired by position, rank 1's call is the next one (8-12 ms later
    # than rank 0's), so rank 1 looks late for every call and rank 0 never.
    assert naive_late_ranks(traces) == {1}
    across = match(traces)
    (found,) = across.shifts
    (stream,) = found.streams
    assert (stream.shift, stream.pairs, stream.clear) == (skip, STEPS - skip, True)
    assert stream.score_us < 20.0                              # the ends agree within jitter
    assert (stream.runner_up is None) is steps                 # steps: the only shift left
    if not steps:
        assert stream.runner_up_us > 5000.0
    assert found.rejected == 0 and abs(found.offset_us) < 20.0
    assert len(across.matched) == STEPS - skip
    assert across.unmatched_calls == skip          # rank 0's first calls: outside the overlap
    assert {m.late_rank for m in across.matched} == {LATE_RANK}
    assert all(abs(m.delay_us - LATE_US) < 30.0 for m in across.matched)
    if steps:
        assert across.straggler is not None and across.straggler.rank == LATE_RANK
    assert f"shift +{skip}, {STEPS - skip} pair(s)" in across.matching_lines()[1]
    assert across.matching_lines()[0].startswith("calls without Seq: per (collective")


@pytest.mark.parametrize("skip", [1, 2])
def test_with_seq_on_every_rank_the_match_is_exact_and_no_shift_is_searched(skip):
    traces = job(skip, seq=True)
    assert naive_late_ranks(traces) == {1}
    across = match(traces)
    assert across.shifts[0].streams == [] and across.matching_lines() == []
    assert sorted(m.key for m in across.matched) == [("seq", "0", s)
                                                     for s in range(skip, STEPS)]
    assert {m.late_rank for m in across.matched} == {LATE_RANK}
    assert across.straggler is not None and across.straggler.rank == LATE_RANK
    # Seq on one rank only: not an identity both share; the shift search takes over.
    for c in traces[1].calls:
        c.seq = None
    across = match(traces)
    assert across.shifts[0].streams[0].shift == skip
    assert across.straggler is not None and across.straggler.rank == LATE_RANK


@pytest.mark.parametrize(("jitter", "spacing"), [(10.0, (10000, 10000)), (3000.0, (8000, 12000))])
def test_no_clearly_better_shift_leaves_the_stream_unmatched_and_names_no_straggler(jitter,
                                                                                     spacing):
    # Unnamed hosts (the offset is searched), no steps: calls exactly 10 ms apart, where a
    # shift of one call and a clock offset of 10 ms fit alike; or ends scattered by +-3 ms
    # against calls 8-12 ms apart, where no shift fits 10 x better + 100 us than the next.
    traces = job(1, seq=False, end_jitter_us=jitter, steps=False, host=None,
                 spacing_us=spacing)
    across = match(traces)
    (stream,) = across.shifts[0].streams
    assert not stream.clear and stream.runner_up is not None
    assert stream.runner_up_us < 10 * stream.score_us + 100
    assert across.matched == [] and across.unmatched_calls == 2 * STEPS - 1
    assert across.straggler is None
    assert across.straggler_test.startswith("no straggler verdict: which call is which is "
                                            "not clear on 1 stream(s)")
    assert "NOT clear" in across.straggler_test


def test_a_call_missing_inside_a_trace_is_rejected_not_paired_with_the_next():
    # Rank 1 misses call 10 of 12 (a sampled trace): shift 0 pairs calls 0-9 rightly, then
    # rank 0's call 10 with rank 1's next one, whose end is ~10 ms off: not one call.
    traces = job(0, seq=False, drop=(10,), steps=False)
    across = match(traces)
    found = across.shifts[0]
    assert found.streams[0].shift == 0 and found.rejected == 1
    assert len(across.matched) == 10 and across.unmatched_calls == 23 - 20
    assert {m.late_rank for m in across.matched} == {LATE_RANK}


def test_shifts_are_bounded_and_non_synchronising_calls_go_by_order():
    traces = job(0, seq=False)
    reference = {stream_key(traces[0].calls[0]): traces[0].calls}
    later = {stream_key(traces[0].calls[0]): traces[0].calls[SHIFT_BOUND + 1:]}
    found = find_shifts(reference, later, 1, 0)
    # The true shift (9) is beyond the bound: every shift tried pairs different calls.
    assert found.streams[0].shift != SHIFT_BOUND + 1
    for c in traces[0].calls + traces[1].calls:
        c.collective = "broadcast"
    (stream,) = match(traces).shifts[0].streams
    assert not stream.judged and stream.shift == 0 and "by order" in stream.describe()


def test_sampled_128_pair_rank_one_starts_one_alltoall_later():
    # By hand from the raw events (ts + dur of the ncclKernel_SendRecv kernels launched in
    # ProfilerStep#551, the window): rank 0's two alltoall kernels end at 1682725898125046
    # (094377 + 30669, the long[384] alltoall) and ...187835 (125052 + 62783, the u8 one);
    # rank 1's at ...187835 (129911 + 57924, the u8 one, to the microsecond) and ...275717.
    # So rank 1's first alltoall is rank 0's second: shift +1 (the sampled traces keep a
    # subset of events; rank 1's long[384] alltoall of that step is not in its file). The
    # all-reduces: rank 0's first ends at ...307389 (295662 + 11727), rank 1's at ...307334
    # (298964 + 8370): shift 0, 55 us apart; their second ones are different calls (26955536
    # vs 26258430 floats in the nccl:all_reduce spans) ending 134153 us apart; the
    # all-gathers end at ...627817 and ...628149 (332 us). Position pairing paired both
    # alltoalls wrongly, ends 62789 and 87882 us apart.
    paths = [fixture_path("traces", f"HolisticTraceAnalysis__sampled_rank-{r}of128.json.gz")
             for r in (0, 1)]
    across = match([read_rank(str(p), None) for p in paths])
    (found,) = across.shifts
    shifts = {s.stream[0]: s for s in found.streams}
    assert {c: s.shift for c, s in shifts.items()} == {"alltoall": 1, "all_reduce": 0,
                                                       "all_gather": 0}
    assert all(s.clear for s in found.streams)
    assert shifts["alltoall"].runner_up == 0 and shifts["alltoall"].runner_up_us > 60000
    assert found.rejected == 1                         # the two different all-reduces
    ends = {m.collective: [m.ends_us[0], m.ends_us[1]] for m in across.matched}
    assert ends == {"alltoall": [1682725898187835.0] * 2,
                    "all_reduce": [1682725898307389.0, 1682725898307334.0],
                    "all_gather": [1682725898627817.0, 1682725898628149.0]}
    assert across.unmatched_calls == 10 - 2 * 3
    assert {m.late_rank for m in across.matched} == {1}



def test_step_numbers_that_contradict_the_ends_are_not_trusted():
    # Rank 1's ProfilerSteps numbered one higher than rank 0's for the same iterations: the
    # shift pairing "the same" step numbers pairs different calls, ~10 ms apart on one clock.
    traces = job(0, seq=False)
    for c in traces[1].calls:
        c.step = (c.step or 0) + 1
    across = match(traces)
    (stream,) = across.shifts[0].streams
    assert not stream.clear and stream.steps_disagree and stream.runner_up == 0
    assert across.straggler is None and "pairs other ProfilerSteps" in across.straggler_test
