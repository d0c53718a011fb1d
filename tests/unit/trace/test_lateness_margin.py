"""A rank is late only by more than the lateness margin: ties and differences inside what the
clocks can tell name nobody; a rank planted late still is named."""

from __future__ import annotations

from dataclasses import replace

from collscope.trace.across import LATE_FLOOR_US, match
from collscope.trace.analyze import read_rank
from collscope.trace.calls import CommCall
from collscope.trace.rank import RankTrace, StepBreakdown
from tests.conftest import fixture_path


def ranks(late_by_us: float, count: int = 8, steps: int = 12) -> list[RankTrace]:
    """``count`` ranks on one host, one all-reduce per step; the last rank ready
    ``late_by_us`` after the others, every call ending at the same instant."""
    def calls(r: int) -> list[CommCall]:
        late = late_by_us if r == count - 1 else 0.0
        return [CommCall("all_reduce", "float", 4 << 20, "0", count, i, 1000.0 * i + late,
                         100.0 - late, step=i) for i in range(steps)]
    return [RankTrace(host="h", path=f"r{r}", rank=r, world_size=count, backend="nccl",
                      job=(count,), timing="gpu kernels", calls=calls(r),
                      steps=[StepBreakdown(s, 10.0, 5.0, 1.0, 0.5, 50.0, 0.0)
                             for s in range(steps)],
                      window="w", comm_ms=1, compute_ms=1, exposed_comm_ms=0.5,
                      overlap_percent=50, shared_stream_comm_ms=0, first_ts=0, last_ts=1e6)
            for r in range(count)]


def test_identical_ranks_name_no_straggler():
    across = match(ranks(0.0))
    assert len(across.matched) == 12
    assert all(m.late_rank is None for m in across.matched)
    assert across.straggler is None
    assert [(r.late_calls, r.late_steps, r.wait_caused_ms) for r in across.ranks] == \
        [(0, 0, 0.0)] * 8
    assert across.straggler_test.startswith("no straggler: in none of the 12 steps")


def test_a_difference_under_the_margin_is_no_lateness():
    across = match(ranks(LATE_FLOOR_US / 2))
    assert across.straggler is None and all(r.late_calls == 0 for r in across.ranks)


def test_a_rank_late_by_more_than_the_margin_is_named():
    across = match(ranks(3 * LATE_FLOOR_US))
    assert across.straggler is not None and across.straggler.rank == 7
    assert across.ranks[7].late_steps == 12 and across.ranks[7].wait_caused_ms > 0


def test_eight_copies_of_a_real_trace_name_no_straggler():
    """One rank's real trace as 8 identical ranks (benchmarks/trace_scale.py's case): before
    the margin, the highest rank won every tie and was named late in every step."""
    trace = read_rank(str(fixture_path(
        "traces", "HolisticTraceAnalysis__trace_diff_control_rank3of8.json.gz")), None)
    across = match([replace(trace, rank=r, path=f"r{r}") for r in range(8)])
    assert across.matched and across.straggler is None
    assert all(r.late_calls == 0 and r.wait_caused_ms == 0 for r in across.ranks)
