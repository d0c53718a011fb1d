"""Report inputs: JSON Lines and nccl-tests logs told apart by content, bad lines reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collscope.records.load import (
    InputError,
    display_names,
    load_input,
    looks_like_jsonl,
    parse_input,
)
from collscope.report.compare import compare
from collscope.report.html import render_report
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.unit.report.samples import run_record, samples, sweep, train_records, write_jsonl


def test_jsonl_runs_group_the_records_that_follow_them(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [
        run_record("a"), *sweep("all_reduce"), *train_records(),
        run_record("b"), *samples("b", 3)])
    source = load_input(path)
    assert source.kind == "jsonl" and source.name == "x.jsonl"
    assert [run.label for run in source.runs] == ["x.jsonl #1", "x.jsonl #2"]
    first, second = source.runs
    assert first.context["hosts"] == ["a"] and second.context["hosts"] == ["b"]
    assert len(first.results) == len(sweep()) and len(first.train) == 3
    assert len(second.samples) == 3 and not second.results
    assert source.counts() == {"runs": 2, "results": len(sweep()), "train": 3, "samples": 3,
                               "predictions": 0, "tune": 0, "trace": 0, "links": 0,
                               "overlap": 0, "hang": 0, "watch": 0, "doctor": 0}
    assert source.holdings() == "2 run(s), 16 results, 3 train record(s), 3 sample(s)"
    assert source.warnings == []


def test_unusable_lines_are_warned_with_their_line_numbers() -> None:
    good = json.dumps(sweep()[0].to_dict())
    text = "\n".join([
        json.dumps(run_record()),
        good,
        '{"kind": "result", "collective": "all_reduce"}',   # fields missing
        "not json at all",
        "[1, 2]",
        '{"kind": "weather"}',
        '{"kind": "sample", "ts": "noon", "host": "n0", "metrics": {}}',
        good[: len(good) // 2],                              # cut by a crash
    ])
    source = parse_input(text, "r.jsonl")
    assert len(source.results) == 1
    numbers = [w.split(": line ")[1].split(":")[0] for w in source.warnings]
    assert numbers == ["3", "4", "5", "6", "7", "8"]
    assert source.warnings[0] == ("r.jsonl: line 3: result record without size_bytes, dtype, "
                                  "in_place, time_us, busbw_gbs; skipped")
    # a field present but of another type: msgspec's words, naming the field
    assert source.warnings[4] == ("r.jsonl: line 7: sample record: Expected `float`, got `str` - "
                                  "at `$.ts`; skipped")


def test_results_before_any_run_record_form_a_run_without_context() -> None:
    text = "\n".join(json.dumps(r.to_dict()) for r in sweep())
    source = parse_input(text, "bare.jsonl")
    assert len(source.runs) == 1 and source.runs[0].context == {}
    assert source.runs[0].label == "bare.jsonl"


def test_a_log_is_imported_with_its_warnings() -> None:
    source = load_input(fixture_path("nccl-tests-logs",
                                       "mi325x_1to8node_allreduce_rccl_egrep_filtered.txt"))
    assert source.kind == "nccl-tests"
    assert [run.label.split(" ")[-1] for run in source.runs] == ["[1-node]", "[2-node]",
                                                                   "[4-node]", "[8-node]"]
    assert [run.context["world_size"] for run in source.runs] == [8, 16, 32, 64]
    assert all(w.startswith("mi325x_1to8node") and "line " in w for w in source.warnings)


def test_own_log_samples_are_read_as_logs() -> None:
    for path in sorted((OWN_FIXTURES / "nccl-tests-logs").glob("*.txt")):
        assert not looks_like_jsonl(path.read_text())
        source = load_input(path)
        assert source.kind == "nccl-tests" and source.results, path.name
        assert all(run.context["command"] == "import" for run in source.runs)


def test_a_log_without_table_is_an_error_naming_the_failure(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no result table; the log reports a failure at line"):
        load_input(fixture_path("nccl-tests-logs",
                                  "h100_2node_16gpu_alltoall_sendrecv_nccl_network_error.txt"))
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"kind": "weather"}\n')
    with pytest.raises(InputError, match="no run, result, train or sample records"):
        load_input(empty)
    with pytest.raises(InputError, match="cannot read"):
        load_input(tmp_path / "missing.jsonl")


def test_display_names_stay_unique() -> None:
    assert display_names(["a/x.jsonl", "b/y.jsonl"]) == ["x.jsonl", "y.jsonl"]
    assert display_names(["a/x.jsonl", "b/x.jsonl"]) == ["a/x.jsonl", "b/x.jsonl"]
    assert display_names(["x.jsonl", "x.jsonl"]) == ["x.jsonl (1)", "x.jsonl (2)"]


_values = st.one_of(st.none(), st.booleans(), st.integers(-5, 1 << 40),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3),
                                                                         st.integers(), max_size=2))
_fields = st.sampled_from(["collective", "size_bytes", "dtype", "op", "in_place", "time_us",
                           "busbw_gbs", "algbw_gbs", "world_size", "algo", "wrong", "ts",
                           "metrics", "host", "config", "step_time_ms", "hosts", "devices",
                           "env", "versions", "extra"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["run", "result", "train", "sample", "other"]),
                          st.dictionaries(_fields, _values, max_size=8)), max_size=8))
def test_odd_records_never_break_loading_rendering_or_comparing(records: list) -> None:
    good = sweep()[:2]
    lines = [json.dumps(run_record()), *(json.dumps(r.to_dict()) for r in good)]
    for kind, fields in records:
        lines.append(json.dumps({**fields, "kind": kind}))
    source = parse_input("\n".join(lines), "odd.jsonl")
    assert len(source.results) >= 2
    render_report([source], 0.0)
    comparison = compare(source.results, good)
    assert len(comparison.rows) >= 2


def test_names_grow_by_folders_and_keep_an_absolute_path_as_written() -> None:
    from collscope.records.load import display_names

    assert display_names(["/a/x.jsonl", "/b/x.jsonl"]) == ["a/x.jsonl", "b/x.jsonl"]
    # Down to the root: the path itself, never '//data/base.jsonl'.
    assert display_names(["/data/base.jsonl", "/other/data/base.jsonl"]) == [
        "/data/base.jsonl", "other/data/base.jsonl"]


def test_an_input_is_named_by_the_path_as_given(tmp_path: Path) -> None:
    import re

    from collscope.records.load import InputError, load_input

    given = f"{tmp_path}/./absent.jsonl"
    with pytest.raises(InputError, match=f"^{re.escape(given)}: cannot read it"):
        load_input(given)


def _first(folder: str, name: str, kind: str, **having: Any) -> dict[str, Any]:
    """The first record of ``kind`` (with the fields ``having``) in a fixture file."""
    for line in fixture_path("own", folder, name).read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == kind and all(record.get(k) == v for k, v in having.items()):
            return record
    raise AssertionError(f"{name} holds no {kind} record with {having}")


def test_watch_records_join_the_watch_field_and_other_findings_stay_with_trace() -> None:
    stall = "watch_4ranks_gloo_stall_rank2.jsonl"
    window = _first("watch", stall, "watch_window")
    trace_finding = _first("records", "trace_hta_sampled_2ranks.jsonl", "finding")
    text = "\n".join(json.dumps(r) for r in [
        run_record(command="watch"),
        _first("watch", stall, "watch_job"),
        window,
        {k: v for k, v in window.items() if k != "lateness_ms"},          # no lateness
        _first("watch", "watch_4ranks_gloo_straggler_rank2.jsonl", "finding", state="started"),
        trace_finding,
        _first("watch", stall, "watch_stall"),
        _first("watch", stall, "hang_verdict"),
        {"kind": "watch_weather"},
    ])
    source = parse_input(text, "w.jsonl")
    (run,) = source.runs
    assert [r.kind for r in run.watch] == ["watch_job", "watch_window", "finding",
                                           "watch_stall"]
    assert [r.to_dict() for r in run.trace] == [trace_finding]
    assert [r.kind for r in run.hang] == ["hang_verdict"]
    assert source.holdings() == ("1 run(s), 0 results, 1 trace record(s), 1 hang record(s), "
                                 "4 watch record(s)")
    skipped, unknown = source.warnings
    assert skipped == "w.jsonl: line 4: watch_window record without lateness_ms; skipped"
    assert unknown.startswith("w.jsonl: line 9: record kind 'watch_weather' is not one")
    assert "watch_window" in unknown


def test_a_real_watch_file_is_read_whole() -> None:
    source = load_input(fixture_path("own", "watch", "watch_4ranks_gloo_stall_rank2.jsonl"))
    assert source.warnings == [] and source.runs[0].context["command"] == "watch"
    assert source.holdings() == "1 run(s), 0 results, 2 hang record(s), 102 watch record(s)"
