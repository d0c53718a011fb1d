"""`collscope trace --baseline`: one file per use, trailing trace names given back, a folder
at the end of the list taken as the traces."""

from __future__ import annotations

import json

import pytest

from tests.conftest import fixture_path
from tests.helpers import run_cli, usage_error


def test_baseline_takes_one_file_per_use_and_leaves_the_traces(tmp_path):
    trace = fixture_path("traces", "HolisticTraceAnalysis__nccl_data_rank0of2.json.gz")
    log = fixture_path("nccl-tests-logs", "h100_2node_default_nccl_issue309.txt")
    one = run_cli("trace", "--baseline", str(log), str(trace), "--json", "-", timeout=120)
    assert one.returncode == 0, one.stderr
    run = json.loads(one.stdout.splitlines()[0])
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
