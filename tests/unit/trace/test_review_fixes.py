"""trace review fixes on real traces (tests/fixtures/traces): the small
all-reduce finding's time at stake, per-step time inside the step, --baseline's arguments.
Expected values come from the raw events (gzip + json, a sweep over kernel intervals), not
from collscope."""

from __future__ import annotations

import pytest

from collscope.trace.events import load_trace
from collscope.trace.findings import findings
from collscope.trace.rank import analyse_doc
from collscope.trace.table import collective_rows
from tests.conftest import fixture_path
from tests.helpers import run_cli, usage_error


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


def test_baseline_takes_one_file_per_use_and_leaves_the_traces(tmp_path):
    trace = fixture_path("traces", "HolisticTraceAnalysis__nccl_data_rank0of2.json.gz")
    log = fixture_path("nccl-tests-logs", "h100_2node_default_nccl_issue309.txt")
    one = run_cli("trace", "--baseline", str(log), str(trace), "--json", "-", timeout=120)
    assert one.returncode == 0, one.stderr
    run = __import__("json").loads(one.stdout.splitlines()[0])
    assert run["kind"] == "run"
    # Two baselines: the flag twice (the old comma-free list form would eat the trace).
    two = run_cli("trace", "--baseline", str(log), "--baseline", str(log), str(trace),
                  "--json", "-", timeout=120)
    assert two.returncode == 0, two.stderr
    usage_error(run_cli("trace", str(trace), "--baseline", timeout=60), "--baseline")


@pytest.mark.parametrize(("traces", "baseline", "expected"), [
    ([], ["bl.jsonl", "run.json.gz"], (["run.json.gz"], ["bl.jsonl"])),
    ([], ["bl.jsonl", "a.log", "r0.json", "r1.json.gz"], (["r0.json", "r1.json.gz"],
                                                          ["bl.jsonl", "a.log"])),
    (["t/"], ["bl.jsonl", "a.log"], (["t/"], ["bl.jsonl", "a.log"])),     # the old form
    ([], ["only.json"], ([], ["only.json"])),       # nothing to give back: TRACE is missing
    ([], ["x.json", "y.json"], (["y.json"], ["x.json"])),   # the first value stays a baseline
])
def test_trailing_trace_names_are_given_back_from_baseline(traces, baseline, expected):
    from collscope.cli.trace import traces_after_baseline

    assert traces_after_baseline(traces, baseline) == expected


def test_a_folder_at_the_end_of_baseline_is_the_trace(tmp_path):
    from collscope.cli.trace import traces_after_baseline

    (tmp_path / "trd").mkdir()
    folder = str(tmp_path / "trd")
    assert traces_after_baseline([], ["bl.jsonl", folder]) == ([folder], ["bl.jsonl"])
