"""nccl-tests' -J JSON and rccl-tests' -Z csv|json files: recognised by content, read into the
same records as a text log, damaged ones read as far as they go."""

from __future__ import annotations

import json

import pytest
from hypothesis import strategies as st

from collscope.parsers.nccl_tests import (
    NCCL_TESTS_JSON,
    RCCL_TESTS_CSV,
    RCCL_TESTS_JSON,
    TEXT,
    detect_format,
    parse_any,
)
from collscope.records.load import parse_input
from collscope.records.logs import import_log
from tests.conftest import OWN_FIXTURES
from tests.helpers import run_cli
from tests.unit.parsers import mutations, nccl_tests_json_shape

OWN = OWN_FIXTURES / "nccl-tests-logs"
NCCL_JSON = "nccl_tests_json_v3_per_iter_2ranks.json"
RCCL_CSV = "rccl_tests_Z_csv_mpi_8ranks.csv"
RCCL_JSON = "rccl_tests_Z_json_4gpus_alltoall_2cycles.json"


def _text(name: str) -> str:
    return (OWN / name).read_text()


@pytest.mark.parametrize(("name", "kind"), [
    (NCCL_JSON, NCCL_TESTS_JSON), (RCCL_CSV, RCCL_TESTS_CSV), (RCCL_JSON, RCCL_TESTS_JSON),
    ("all_reduce_wrong_values_noise.txt", TEXT)])
def test_recognised_by_content_not_by_name(name: str, kind: str) -> None:
    assert detect_format(_text(name)) == kind
    assert detect_format("\n\n" + _text(name)) == kind


def test_sample_has_the_structure_nccl_tests_writes() -> None:
    assert nccl_tests_json_shape.problems(json.loads(_text(NCCL_JSON)), per_iter=True) == []


def test_nccl_tests_json_into_records() -> None:
    (run,) = import_log(_text(NCCL_JSON), NCCL_JSON)
    assert run.warnings == []
    context = run.run
    assert (context.world_size, context.nodes, context.ranks_per_node) == (2, 2, 1)
    assert context.hosts == ["gpu-a", "gpu-b"] and context.versions == {"nccl": "2.29.2"}
    assert context.argv[0] == "./build/all_reduce_perf"           # "\/" unescaped
    assert context.env == {"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5_0"}   # no PATH, token
    assert context.extra["source_format"] == NCCL_TESTS_JSON
    assert context.extra["footer"]["out_of_bounds_status"] == "OK"
    assert context.extra["footer"]["avg_busbw_status"] is None      # "unchecked"
    assert context.extra["info"]["start_time"] == "2026-11-30 14:02:11"
    first, _, last_out, last_in = run.results
    # out-of-place 1 MiB: times 61.2 60.8 62.0 61.0 -> mean 61.25; sorted p50 = [2] = 61.2,
    # p95 = sorted[min(3, (4*95+99)//100 - 1)] = sorted[3] = 62.0
    assert (first.time_us, first.time_us_p50, first.time_us_p95) == (61.25, 61.2, 62.0)
    assert (first.time_us_min, first.time_us_max, first.iters) == (60.8, 62.0, 4)
    assert first.algbw_gbs == 17.119608 and first.busbw_gbs == 17.119608   # 2 ranks: x1
    assert (last_out.size_bytes, last_out.count, last_out.in_place) == (16777216, 4194304, False)
    assert last_in.in_place and last_in.wrong == 0 and last_in.time_us == 400.3


def test_cut_off_json_keeps_what_was_written() -> None:
    text = _text(NCCL_JSON)
    cut = text[: text.index('{"size":16777216')]
    (test,) = parse_any(cut)[1].value
    assert [row.size_bytes for row in test.rows] == [1048576]
    assert any("ends before its end" in w for w in test.warnings)
    assert test.footer.out_of_bounds is None and not test.concluded


@pytest.mark.parametrize("bad", ['inf', '"nan"'])
def test_non_number_busbw_keeps_the_result_with_its_time(bad: str) -> None:
    # nccl-tests writes "bus_bw":"nan" (and bare inf) where it could not compute a busbw; the
    # time is valid, so the result stays, busbw recomputed from algbw x bus factor.
    text = _text(NCCL_JSON).replace('"bus_bw":17.119608', f'"bus_bw":{bad}', 1)
    (test,) = parse_any(text)[1].value
    assert test.rows[0].out_of_place is not None and test.rows[0].out_of_place.time_us == 61.25
    assert any("results[0].out_of_place: bus_bw" in w for w in test.warnings)
    (run,) = import_log(text, "j_nan.json")
    assert len(run.results) == 4               # 2 rows x 2 placements, none dropped
    first = run.results[0]
    # all_reduce on 2 ranks: bus factor 2(n-1)/n = 1, so busbw = the printed algbw
    assert (first.time_us, first.algbw_gbs, first.busbw_gbs) == (61.25, 17.119608, 17.119608)


def test_non_number_algbw_is_recomputed_from_size_and_time() -> None:
    text = _text(NCCL_JSON).replace('"alg_bw":17.119608,"bus_bw":17.119608',
                                    '"alg_bw":"nan","bus_bw":"nan"', 1)
    (run,) = import_log(text, "j_nan.json")
    first = run.results[0]
    assert first.time_us == 61.25
    assert first.algbw_gbs == pytest.approx(1048576 / 61.25 / 1e3)       # GB/s = B / us / 1e3
    assert first.busbw_gbs == pytest.approx(first.algbw_gbs)


def test_several_gpus_per_process_fill_the_device_list_by_nccl_tests_rule() -> None:
    doc = json.loads(_text(NCCL_JSON))
    doc["config"]["ngpus"] = 4
    doc["config"]["devices"][1]["rank"] = 4          # the first rank of the second process
    (test,) = parse_any(json.dumps(doc))[1].value
    assert test.world_size == 8
    assert [(d.rank, d.host, d.device) for d in test.devices][3:5] == [
        (3, "gpu-a", 3), (4, "gpu-b", 0)]


def test_rccl_tests_csv() -> None:
    runs = import_log(_text(RCCL_CSV), RCCL_CSV)
    assert [r.run.extra["program"] for r in runs] == ["all_reduce_perf", "all_gather_perf"]
    for run in runs:
        assert run.warnings == [] and run.run.backend == "rccl"
        assert (run.run.world_size, run.run.nodes, run.run.ranks_per_node) == (8, 1, 8)
    reduce, gather = runs
    assert [(r.size_bytes, r.count, r.in_place) for r in reduce.results][:2] == [
        (1048576, 262144, False), (1048576, 262144, True)]
    assert gather.results[0].count == 1048576 // (4 * 8)      # per-rank count, chunked
    assert reduce.results[0].busbw_gbs == 40.669504 and reduce.results[0].time_us == 45.12
    assert reduce.run.extra["result_lines"] == [2, 2, 4, 4]        # the line of each row


def test_rccl_tests_json_cycles_and_unverified_in_place() -> None:
    (run,) = import_log(_text(RCCL_JSON), RCCL_JSON)
    assert run.warnings == [] and run.run.world_size == 4
    assert run.run.extra["world_size_method"] == "gpus column"
    assert [(r.in_place, r.wrong) for r in run.results] == [
        (False, 0), (True, None), (False, 0), (True, None)]
    assert [row.cycle for row in run.test.rows] == [0, 1]             # type: ignore[union-attr]
    assert run.results[2].time_us == 81.5 and run.results[0].busbw_gbs == 39.077366


@pytest.mark.parametrize("name", [NCCL_JSON, RCCL_CSV, RCCL_JSON])
def test_report_and_compare_read_them(name: str) -> None:
    loaded = parse_input(_text(name), name)
    assert loaded.results and loaded.kind == "nccl-tests"


def test_import_cli_reads_json(tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    proc = run_cli("import", str(OWN / NCCL_JSON), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    kinds = [json.loads(line)["kind"] for line in out.read_text().splitlines()]
    assert kinds == ["run", "result", "result", "result", "result"]


def test_compare_cli_reads_nccl_tests_json() -> None:
    proc = run_cli("compare", str(OWN / NCCL_JSON), str(OWN / NCCL_JSON), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    head, *rows = [json.loads(line) for line in proc.stdout.splitlines()]     # JSON Lines
    assert head["kind"] == "compare" and head["matched"] == len(rows) > 0


def _check(_parser: object, parsed) -> None:
    for test in parsed.value:
        for row in test.rows:
            for _, p in row.placements():
                assert all(v == v and abs(v) != float("inf")
                           for v in (p.time_us, p.algbw_gbs, p.busbw_gbs))


def _parse_any(text: str):
    return parse_any(text)[1]


@pytest.mark.parametrize("name", [NCCL_JSON, RCCL_JSON])
def test_changed_json_shapes_never_raise(name: str) -> None:
    mutations.assert_parsers_never_raise([_parse_any], _text(name),
                                         damage=mutations.mutated_json, check=_check)


@pytest.mark.parametrize("name", [NCCL_JSON, RCCL_CSV, RCCL_JSON])
def test_damaged_text_never_raises(name: str) -> None:
    mutations.assert_parsers_never_raise([_parse_any], _text(name), check=_check)


def test_cut_anywhere_never_raises() -> None:
    text = _text(NCCL_JSON)
    mutations.assert_parsers_never_raise(
        [_parse_any], st.integers(0, len(text)).map(lambda n: text[:n]), check=_check)


@pytest.mark.parametrize("field", ["errors", "args", "env"])
def test_json_lists_of_the_wrong_type_lose_no_rows(field: str) -> None:
    data = json.loads(_text(NCCL_JSON))
    rows = sum(len(t.rows) for t in parse_any(json.dumps(data))[1].value)
    data[field] = 7
    kind, parsed = parse_any(json.dumps(data))
    assert kind == NCCL_TESTS_JSON
    assert sum(len(t.rows) for t in parsed.value) == rows > 0


def test_implausible_gpus_per_process_is_capped_with_a_warning() -> None:
    data = json.loads(_text(NCCL_JSON))
    data["config"]["ngpus"] = 10**30
    _, parsed = parse_any(json.dumps(data))
    (test,) = parsed.value
    assert len(test.devices) == len(data["config"]["devices"])
    assert any("not plausible" in w for w in parsed.warnings)


def test_json_without_usable_rows_names_its_format() -> None:
    data = json.loads(_text(NCCL_JSON))
    data["results"] = []
    with pytest.raises(Exception, match=r"nccl-tests JSON \(-J\) file without a usable"):
        import_log(json.dumps(data), "x.json")
