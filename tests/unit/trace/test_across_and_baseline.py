"""Cross-rank matching, the straggler test, baseline interpolation and findings (pure)."""

from __future__ import annotations

import math

import pytest

from collscope.records.bench import BenchResult
from collscope.records.trace import TraceStepRecord
from collscope.trace.across import match
from collscope.trace.analyze import TraceResult, check_one_job
from collscope.trace.baseline import Baseline
from collscope.trace.calls import CommCall
from collscope.trace.events import TraceInputError
from collscope.trace.rank import RankTrace
from collscope.trace.table import collective_rows


def call(start: float, seq: int | None = None, size: int = 4 << 20, dur: float = 100.0,
         step: int | None = 0) -> CommCall:
    return CommCall("all_reduce", "float", size, "0", 4, seq, start, dur, step=step)


def rank(r: int, calls: list[CommCall], steps: int = 1) -> RankTrace:
    # One host: one clock. (These calls all last 100 us, so their ends do not coincide as a
    # real collective's do; on traces naming no host, --clock-align auto would take the late
    # rank's later ends for its clock's offset.)
    return RankTrace(host="h", path=f"r{r}", rank=r, world_size=4, backend="nccl", job=(4,),
                     timing="gpu kernels", calls=calls,
                     steps=[TraceStepRecord(r, s, 10.0, 5.0, 1.0, 0.5, 50.0, 0.0)
                            for s in range(steps)],
                     window="w", comm_ms=1, compute_ms=1, exposed_comm_ms=0.5,
                     overlap_percent=50, shared_stream_comm_ms=0, first_ts=0, last_ts=1e6)


def test_rank_two_late_in_every_step_is_the_straggler():
    # 12 steps of one call; rank 2 starts each 300 us after the others (0..3 us apart).
    traces = [rank(r, [call(1000.0 * i + (300 if r == 2 else r), seq=i, step=i)
                       for i in range(12)], steps=12) for r in range(4)]
    across = match(traces)
    assert len(across.matched) == 12 and across.unmatched_calls == 0
    assert {m.late_rank for m in across.matched} == {2}
    assert across.matched[0].skew_us == pytest.approx(300)
    assert across.matched[0].wait_us == pytest.approx(300 + 299 + 297)
    late = {r.rank: r.late_calls for r in across.ranks}
    assert late == {0: 0, 1: 0, 2: 12, 3: 0}
    assert [r.late_steps for r in across.ranks] == [0, 0, 12, 0]
    assert across.straggler is not None and across.straggler.rank == 2
    assert (across.straggler.late_steps, across.straggler.steps) == (12, 12)
    # Steps are the trials: P(X >= 12 | n=12 steps, p=1/4) x 4 ranks (Bonferroni)
    assert across.straggler.p_value == pytest.approx(4 * 0.25 ** 12)
    assert "12 late steps of 12" in across.straggler.test


def test_one_slow_step_is_no_straggler():
    # 8 steps. In step 3 rank 1 is late for all 20 calls (one slow step: every call of it
    # waits); in the others the rank that holds up the step's worst call rotates (step % 4).
    # Counted per call, rank 1 is late in 20 + 7 of 48 calls, p ~ 1e-6: a false straggler.
    def starts(r: int, step: int) -> list[CommCall]:
        if step == 3:
            return [call(10000.0 * step + 100 * i + (80 if r == 1 else 0), step=step)
                    for i in range(20)]
        return [call(10000.0 * step + 1000 * i + (50 if r == step % 4 and i == 0 else
                                                   10 if r == (step + i) % 4 else 0),
                     step=step) for i in range(4)]
    traces = [rank(r, [c for step in range(8) for c in starts(r, step)], steps=8)
              for r in range(4)]
    across = match(traces)
    lateness = {r.rank: r for r in across.ranks}
    assert len(across.matched) == 48
    assert lateness[1].late_calls == 27                    # descriptive: 20 of them one step
    assert [lateness[r].late_steps for r in range(4)] == [2, 3, 2, 1]     # 3 of 8: p = 1
    assert across.straggler is None
    assert across.straggler_test.startswith("no straggler: rank")
    assert "of 8 steps" in across.straggler_test


def test_too_few_steps_cannot_name_a_straggler():
    # Rank 2 late in both steps: 4 x (1/4)^2 = 0.25, no test can reach 0.01 with 2 steps.
    traces = [rank(r, [call(1000.0 * i + (300 if r == 2 else 0), seq=i, step=i // 10)
                       for i in range(20)], steps=2) for r in range(4)]
    across = match(traces)
    assert across.ranks[2].late_calls == 20 and across.ranks[2].late_steps == 2
    assert across.straggler is None
    assert across.straggler_test.startswith("no straggler test: 2 step(s)")


def test_without_profiler_steps_there_is_no_straggler_test():
    traces = [rank(r, [call(1000.0 * i + (300 if r == 2 else 0), seq=i, step=None)
                       for i in range(20)], steps=0) for r in range(4)]
    across = match(traces)
    assert across.ranks[2].late_calls == 20 and across.straggler is None
    assert across.straggler_test.startswith("no straggler test: no matched call lies in a")


def test_rank_figures_and_lateness_cover_the_same_window():
    # Calls outside the window (the last, cut-short ProfilerStep) count nowhere in the ranks.
    def calls(r: int) -> list[CommCall]:
        inside = [call(1000.0 * i + (300 if r == 1 else 0), seq=i, step=i) for i in range(3)]
        outside = [call(5000.0 + 1000 * i + (300 if r == 2 else 0), seq=10 + i, step=None)
                   for i in range(5)]
        for c in outside:
            c.in_window = False
        return inside + outside
    traces = [rank(r, calls(r), steps=3) for r in range(4)]
    result = TraceResult(traces, [], match(traces), [], None)
    records = {r.rank: r for r in result.rank_records()}
    assert {r: records[r].calls for r in records} == {0: 3, 1: 3, 2: 3, 3: 3}
    assert records[1].late_calls == 3 and records[2].late_calls == 0
    assert records[1].late_steps == 3
    assert all(len(records[r].late_by_call) == 3 for r in records)
    assert records[1].window == "w"


def test_late_rank_rotating_is_no_straggler_and_order_matching_without_seq():
    traces = [rank(r, [call(1000.0 * i + (50 if i % 4 == r else 0), step=i) for i in range(12)],
                   steps=12) for r in range(4)]
    across = match(traces)
    assert len(across.matched) == 12
    assert [r.late_calls for r in across.ranks] == [3, 3, 3, 3]
    assert across.straggler is None


def test_calls_missing_on_a_rank_are_not_matched():
    traces = [rank(0, [call(0, seq=1), call(10, seq=2)]), rank(1, [call(1, seq=2)])]
    across = match(traces)
    assert [m.key for m in across.matched] == [("seq", "0", 2)]
    assert across.unmatched_calls == 1


def bench(size: int, busbw: float, world: int = 4) -> BenchResult:
    return BenchResult("all_reduce", size, size // 4, "float", "sum", -1, False, world, 20,
                       10.0, 10.0, 11.0, 9.0, 12.0, busbw / 1.5, busbw, 0)


def test_baseline_interpolates_in_log_size_and_says_when_rank_counts_differ():
    baseline = Baseline([bench(1 << 20, 10.0), bench(4 << 20, 20.0), bench(4 << 20, 18.0)],
                        ["b"])
    value, how = baseline.busbw_at("all_reduce", 4, 2 << 20)
    assert value == pytest.approx(15.0) and "interpolated" in how   # log2: halfway
    assert baseline.busbw_at("all_reduce", 4, 4 << 20)[0] == 20.0  # best of placements
    assert baseline.busbw_at("all_reduce", 4, 64 << 20)[1].startswith("outside")
    value, how = baseline.busbw_at("all_reduce", 8, 1 << 20)
    assert value is None and "no 8-rank all_reduce (it has 4 ranks)" in how


def test_efficiency_and_saving_per_step():
    # 4 MiB all-reduce on 4 ranks, p50 1000 us: algbw 4.194 GB/s, busbw x 1.5.
    trace = rank(0, [call(0, dur=1000.0), call(10, dur=1000.0)])
    row = collective_rows(trace)[0]
    assert row.calls_per_step == 2 and row.kernel_us_p50 == 1000.0
    assert row.busbw_gbs == pytest.approx((4 << 20) / 1e-3 / 1e9 * 1.5)
    Baseline([bench(4 << 20, 2 * row.busbw_gbs)], ["b"]).apply(row)
    assert row.efficiency == pytest.approx(0.5)
    # At baseline speed each call takes 500 us: 2 calls x 0.5 ms saved per step.
    assert row.saving_ms_per_step == pytest.approx(1.0)
    assert not math.isnan(row.baseline_busbw_gbs)


def test_gloo_spans_take_the_name_of_the_c10d_op_that_issued_them():
    from collscope.trace.calls import name_by_issuing_op
    from collscope.trace.events import Event

    ops = [Event(ph="X", name="c10d::_reduce_scatter_base_", ts=10.0, dur=1.0),
           Event(ph="X", name="c10d::allreduce_", ts=20.0, dur=1.0),
           Event(ph="X", name="c10d::_allgather_base_", ts=30.0, dur=1.0)]
    calls = [CommCall("all_reduce", "float", 8, "", 2, None, 12.0, 5.0),
             CommCall("all_reduce", "float", 8, "", 2, None, 22.0, 5.0),
             CommCall("all_gather", "float", 8, "", 2, None, 31.0, 5.0)]
    name_by_issuing_op(calls, ops)
    assert [c.collective for c in calls] == ["reduce_scatter", "all_reduce", "all_gather"]


def test_findings_are_ranked_by_time_at_stake():
    from collscope.trace.findings import findings

    small = [call(100.0 * i, size=64 << 10, dur=50.0) for i in range(10)]   # 10 x 64 KiB
    trace = rank(0, small)
    trace.overlap_percent, trace.exposed_comm_ms = 5.0, 4.0    # of 10 ms steps: 40%
    trace.shared_stream_comm_ms = 0.25
    found = findings([trace], collective_rows(trace), None)
    assert [f.id for f in found] == ["comm-exposed", "small-all-reduces",
                                     "comm-on-compute-stream"]
    # 4 ms exposed per step, of which the small all-reduces (10 x 50 us, no compute) claim
    # 0.5 ms: the comm-exposed finding keeps the rest, not the whole again.
    assert found[0].at_stake_ms == pytest.approx(3.5)
    assert found[1].at_stake_ms == pytest.approx(0.5)          # 10 x 50 us per step
    assert all(f.fix and f.test for f in found)


@pytest.mark.parametrize("other_job, named", [
    ((2, "nccl", (("0", (0, 2)),)), "process groups (('0', (0, 2)),) vs (('0', (0, 1)),)"),
    ((4, "nccl", (("0", (0, 1)),)), "world size 4 vs 2"),
    ((2, "gloo", (("0", (0, 1)),)), "backend 'gloo' vs 'nccl'"),
])
def test_mixed_jobs_are_refused_naming_the_field_that_differs(other_job, named):
    first, second = rank(0, []), rank(1, [])
    first.job, second.job = (2, "nccl", (("0", (0, 1)),)), other_job
    with pytest.raises(TraceInputError) as refused:
        check_one_job([first, second])
    assert "r1: a different job than r0 (" in str(refused.value)
    assert named in str(refused.value)
