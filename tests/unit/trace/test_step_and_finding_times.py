"""Times `collscope trace` gives steps and findings, on real traces (tests/fixtures/traces):
the small all-reduce finding's time at stake, each step's figures inside its span. Expected
values come from the raw events (gzip + json, a sweep over kernel intervals), not from
collscope."""

from __future__ import annotations

import pytest

from collscope.trace.events import load_trace
from collscope.trace.findings import findings
from collscope.trace.rank import analyse_doc
from collscope.trace.table import collective_rows
from tests.conftest import fixture_path


def _analyse(name: str):
    path = fixture_path("traces", name)
    return analyse_doc(load_trace(path), str(path), None)


def test_small_all_reduces_count_only_latency_bound_calls_and_share_no_time():
    trace = _analyse("HolisticTraceAnalysis__df_index_resolver_rank1of2.json.gz")
    # One row, size unknown, p50 8 us: 1616 AllReduce kernels launched in steps 2-5, of which
    # 1151 under 50 us (11251 us together); all 238274 us of comm are exposed (no overlap).
    (row,) = collective_rows(trace)
    assert row.size_bytes is None and row.calls == 1616
    found = {f.id: f for f in findings([trace], [row], None)}
    small, exposed = found["small-all-reduces"], found["comm-exposed"]
    assert small.title == "287.8 small all-reduces per step"            # 1151 / 4
    assert small.at_stake_ms == pytest.approx(11.251 / 4)               # not 59.6
    assert exposed.at_stake_ms == pytest.approx((238.274 - 11.251) / 4)
    assert small.at_stake_ms + exposed.at_stake_ms == pytest.approx(trace.exposed_comm_ms / 4)
    assert "no compute running" in small.detail and "claims" in exposed.detail


def test_step_figures_are_what_ran_inside_the_step():
    trace = _analyse("HolisticTraceAnalysis__ns_resolution_rank0of1.pt.trace.json.gz")
    # ProfilerStep#101 spans 35.116 ms; the kernels launched in it run until 101 ms after its
    # start. Inside its span the GPU's kernels cover 29.0445 ms (union, clipped to the span);
    # steps 102-104: 70.34475, 93.70325, 93.58625 ms. Idle = span - union of kernels, copies
    # and sets inside it: 5.83675, 0.897, 1.13925, 1.10925 ms.
    assert [s.step for s in trace.steps] == [101, 102, 103, 104]
    assert [s.compute_ms for s in trace.steps] == pytest.approx(
        [29.0445, 70.34475, 93.70325, 93.58625])
    assert [s.idle_ms for s in trace.steps] == pytest.approx([5.83675, 0.897, 1.13925, 1.10925])
    assert all(s.compute_ms <= s.step_ms for s in trace.steps)
