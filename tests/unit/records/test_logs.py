"""nccl-tests log import: real logs (read in place) and own samples -> RunRecord + BenchResults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from collscope.collectives.table import COLLECTIVES, bandwidths, bus_factor
from collscope.records.base import read_record
from collscope.records.bench import BenchResult
from collscope.records.jsonl import read_records, write_records
from collscope.records.logs import (
    TIMING,
    ImportedRun,
    LogImportError,
    import_file,
    import_log,
    to_records,
)
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.unit.parsers.mutations import (
    REAL_NCCL_TESTS_LOGS,
    count_printed_placements,
    mutated_nccl_tests_logs,
)

OWN = OWN_FIXTURES / "nccl-tests-logs"
OWN_NAMES = sorted(p.name for p in OWN.glob("*.txt"))
FAILED_RUN = "h100_2node_16gpu_alltoall_sendrecv_nccl_network_error.txt"
IMPORTABLE = [name for name in REAL_NCCL_TESTS_LOGS if name != FAILED_RUN]


def _real(name: str) -> list[ImportedRun]:
    return import_file(fixture_path("nccl-tests-logs", name))


def _own(name: str) -> list[ImportedRun]:
    return import_file(OWN / name)


def _results(runs: list[ImportedRun]) -> list[BenchResult]:
    return [result for run in runs for result in run.results]


def _find(run: ImportedRun, size: int, in_place: bool) -> BenchResult:
    (found,) = [r for r in run.results if r.size_bytes == size and r.in_place == in_place]
    return found


# ---------------------------------------------------------------------------------------------
# Every log
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", IMPORTABLE)
def test_every_real_log_imports_one_result_per_printed_placement(name: str) -> None:
    path = fixture_path("nccl-tests-logs", name)
    runs = import_file(path)
    assert runs
    assert len(_results(runs)) == count_printed_placements(path.read_text())
    for run in runs:
        assert run.run.command == "import" and run.run.launcher == "import"
        assert run.run.timing == TIMING
        assert run.run.extra["source"] == str(path)
        assert len(run.run.extra["result_lines"]) == len(run.results)
        # Every real log says (or lets the importer derive) its world size.
        assert run.run.world_size > 0
        assert not [w for w in run.warnings if "busbw" in w and "is not algbw" in w]
        json.dumps(run.records(), allow_nan=False)


def _time_half_unit(time_us: float) -> float:
    """The coarsest rounding nccl-tests ever used for a time of this size: %.0f above 10000 us,
    %.1f above 100 us, %.2f below (recent versions print more digits, never fewer)."""
    if time_us >= 10000:
        return 0.5
    if time_us >= 100:
        return 0.05
    return 0.005


def _check_busbw(results: list[BenchResult]) -> int:
    checked = 0
    for r in results:
        if not r.world_size or r.collective not in COLLECTIVES:
            continue
        factor = bus_factor(r.collective, r.world_size)
        # Printed algbw x factor vs printed busbw: both rounded to 0.01.
        assert abs(r.algbw_gbs * factor - r.busbw_gbs) <= 0.005 * factor + 0.005 + 1e-9, r
        # Size and printed time vs printed bandwidths, within the time's rounding.
        algbw, busbw = bandwidths(r.size_bytes, r.time_us, r.collective, r.world_size)
        relative = _time_half_unit(r.time_us) / (r.time_us - _time_half_unit(r.time_us))
        assert abs(algbw - r.algbw_gbs) <= algbw * relative + 0.005 + 1e-9, r
        assert abs(busbw - r.busbw_gbs) <= busbw * relative + 0.005 + 1e-9, r
        checked += 1
    return checked


@pytest.mark.parametrize("name", IMPORTABLE)
def test_real_busbw_recomputed_from_size_time_and_world_size(name: str) -> None:
    results = _results(_real(name))
    assert _check_busbw(results) == len(results)


@pytest.mark.parametrize("name", OWN_NAMES)
def test_own_samples_busbw_recomputed(name: str) -> None:
    results = _results(_own(name))
    known = [r for r in results if r.world_size and r.collective in COLLECTIVES]
    assert _check_busbw(results) == len(known) > 0


def test_failed_run_log_names_its_failure() -> None:
    path = fixture_path("nccl-tests-logs", FAILED_RUN)
    with pytest.raises(LogImportError) as caught:
        import_file(path)
    assert str(caught.value) == (       # named as given, like every other message about it
        f"{path}: no result table; the log reports a failure at line 22: cnode2-002: Test "
        "NCCL failure common.cu:1279 'remote process exited or there was a network error / ' "
        "(22 failure lines in all)")
    assert isinstance(caught.value, ValueError)


# ---------------------------------------------------------------------------------------------
# Real values
# ---------------------------------------------------------------------------------------------


def test_mi300x_8gpu_run_and_8gib_row() -> None:
    (run,) = _real("mi300x_8gpu_allreduce_rccl_k8s.txt")
    record = run.run
    host = "1942ef50-8240-449e-82ca-4ce7993f70b4-78bfb5d4f4-4z9xh"
    assert (record.backend, record.world_size, record.nodes, record.ranks_per_node) == (
        "rccl", 8, 1, 8)
    assert record.hosts == [host]
    assert record.versions == {"rccl_tests": "develop:a7809b3"}
    assert record.argv[:3] == ["mpirun", "-np", "8"]
    assert record.argv[-9:] == ["./rccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G",
                                "-f", "2", "-g", "1"]
    assert record.devices[3] == {"rank": 3, "host": host, "node": 0, "local_rank": 3,
                                 "device": 3, "name": "AMD Instinct MI300X",
                                 "pci": "0000:65:00", "pid": 7088, "group": 0, "line": 10}
    assert record.env == {}
    assert record.extra["lines"] == [1, 53] and record.extra["table_line"] == 17
    assert record.extra["world_size_method"] == "8 ranks listed in the device block"
    assert record.extra["footer"]["avg_busbw_gbs"] == 110.464
    assert len(run.results) == 62
    big = _find(run, 8589934592, in_place=True)
    assert (big.collective, big.count, big.dtype, big.op, big.root, big.world_size,
            big.iters, big.average) == ("all_reduce", 2147483648, "float", "sum", -1, 8, 20,
                                        "mean")
    assert (big.time_us, big.algbw_gbs, big.busbw_gbs, big.wrong, big.max_error) == (
        47584.0, 180.52, 315.91, 0, None)
    assert (big.time_us_p50, big.time_us_p95, big.time_us_min, big.time_us_max) == (
        None, None, None, None)
    out = _find(run, 8589934592, in_place=False)
    assert (out.time_us, out.algbw_gbs, out.busbw_gbs) == (47617.0, 180.40, 315.69)
    assert run.run.extra["result_lines"][-2:] == [49, 49]


def test_mi300x_2node_rccl_versions_env_hosts() -> None:
    (run,) = _real("mi300x_2node_16gpu_allreduce_rccl.txt")
    record = run.run
    assert record.versions == {"rccl_tests": "develop:448c4c7", "rccl": "2.22.3-HEAD:7d8d67c",
                               "hip": "6.4.43484-123eb5128", "rocm": "6.4.2.0-120-e7d83f5"}
    assert (record.backend, record.world_size, record.nodes, record.ranks_per_node) == (
        "rccl", 16, 2, 8)
    assert record.hosts == ["gpu-53", "gpu-56"]
    assert [d["local_rank"] for d in record.devices[6:10]] == [6, 7, 0, 1]
    assert {d["name"] for d in record.devices} == {"AMD Instinct MI300X"}
    assert record.env == {
        "NCCL_DEBUG": "WARN", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "^mlx5_bond_0",
        "NCCL_NET_GDR_LEVEL": "3", "NCCL_SOCKET_IFNAME": "ens", "UCX_IB_GID_INDEX": "3",
        "UCX_NET_DEVICES": "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,"
                           "mlx5_9:1"}
    assert record.extra["info"]["hostname"] == "gpu-53"
    assert len(run.results) == 64
    assert _find(run, 17179869184, in_place=False).busbw_gbs == 357.46


@pytest.mark.parametrize(("name", "backends"), [
    ("gb300_32node_128gpu_allreduce_nccl_oci_truncated.txt", ["nccl"]),
    ("h100_10node_80gpu_5collectives_nccl.txt", ["nccl"] * 5),
    ("h100_2node_16gpu_allreduce_gcp_a3mega_hash_stripped.txt", ["nccl"]),
    ("mi300x_2node_16gpu_allreduce_rccl.txt", ["rccl"]),
    ("mi300x_8gpu_allreduce_rccl_k8s.txt", ["rccl"]),
    ("mi325x_1to8node_allreduce_rccl_egrep_filtered.txt", ["rccl"] * 4),
    ("mi355x_2node_16gpu_allreduce_rccl_anp_truncated.txt", ["rccl"]),
    ("mi355x_8gpu_alltoall_rccl_oci_rows_truncated.txt", ["rccl"]),
    ("mi355x_pollara_4node_alltoall_rccl_oci_rows_truncated.txt", ["rccl"]),
    ("t4_3node_allreduce_nccl_old_error_column_c0.txt", ["nccl"]),
])
def test_backend_from_the_log(name: str, backends: list[str]) -> None:
    assert [run.run.backend for run in _real(name)] == backends


def test_gb300_elided_devices_layout_guess() -> None:
    (run,) = _real("gb300_32node_128gpu_allreduce_nccl_oci_truncated.txt")
    record = run.run
    assert (record.world_size, record.nodes, record.ranks_per_node) == (128, 32, 4)
    assert record.extra["nodes_method"].startswith("guess")
    assert record.extra["devices_elided"] is True
    assert record.hosts == ["GPU-5705", "GPU-391"]
    assert record.versions == {"nccl": "2.28.7+cuda13.0"}
    assert (record.argv, record.env) == ([], {})
    top = _find(run, 17179869184, in_place=True)
    assert (top.time_us, top.algbw_gbs, top.busbw_gbs, top.iters) == (46070.0, 372.91, 739.99, 50)


def test_mi325x_one_run_per_node_count() -> None:
    runs = _real("mi325x_1to8node_allreduce_rccl_egrep_filtered.txt")
    assert [(r.run.world_size, r.run.nodes, r.run.ranks_per_node) for r in runs] == [
        (8, 1, 8), (16, 2, 8), (32, 4, 8), (64, 8, 8)]
    assert [r.run.extra["label"] for r in runs] == ["1-node", "2-node", "4-node", "8-node"]
    assert all(len(r.results) == 6 and r.results[0].collective == "all_reduce" for r in runs)
    assert all(r.results[0].iters == 0 and r.run.extra["iters_source"] == "unknown (0)"
               for r in runs)
    assert _find(runs[1], 8589934592, in_place=True).busbw_gbs == 349.03


def test_h100_10node_five_runs() -> None:
    runs = _real("h100_10node_80gpu_5collectives_nccl.txt")
    assert [r.results[0].collective for r in runs] == ["all_reduce", "all_gather",
                                                       "reduce_scatter", "alltoall", "sendrecv"]
    assert all(len(r.results) == 20 and r.run.world_size == 80 and r.run.nodes == 10
               for r in runs)
    assert runs[0].run.versions == {"nccl_tests": "2.17.8", "nccl_headers": "2.29.2",
                                    "nccl": "2.29.2"}
    assert [r.run.extra["test_index"] for r in runs] == [0, 1, 2, 3, 4]
    alltoall_in = _find(runs[3], 33553920, in_place=True)
    assert (alltoall_in.wrong, alltoall_in.dtype, alltoall_in.op) == (None, "double", "none")
    assert runs[0].run.extra["reduced_max_bytes"] == 26549638485


def test_t4_old_error_column_na() -> None:
    (run,) = _real("t4_3node_allreduce_nccl_old_error_column_c0.txt")
    assert (run.run.world_size, run.run.nodes, run.run.ranks_per_node) == (3, 3, 1)
    assert run.run.env == {"NCCL_SOCKET_IFNAME": "ens"}
    assert run.run.hosts == ["gpu01", "gpu02", "gpu03"]
    first = _find(run, 104857600, in_place=False)
    assert (first.time_us, first.algbw_gbs, first.busbw_gbs, first.wrong, first.max_error,
            first.root, first.iters) == (202872.0, 0.52, 0.69, None, None, -1, 1)
    assert run.run.extra["failed_results"] == []


def test_pollara_no_context_world_size_from_counts() -> None:
    (run,) = _real("mi355x_pollara_4node_alltoall_rccl_oci_rows_truncated.txt")
    assert (run.run.world_size, run.run.nodes, run.run.hosts) == (32, 0, [])
    assert run.run.extra["world_size_method"].startswith("size / (count x element size)")
    assert [r.wrong for r in run.results] == [0, None, 0, None]


# ---------------------------------------------------------------------------------------------
# Own samples
# ---------------------------------------------------------------------------------------------


def test_wrong_values_mark_failed_results_and_secrets_stay_out() -> None:
    (run,) = _own("all_reduce_wrong_values_noise.txt")
    assert [(r.size_bytes, r.in_place, r.wrong) for r in run.results if r.wrong] == [
        (65536, True, 12), (1048576, False, 1048580)]
    assert run.run.extra["failed_results"] == [7, 10]
    assert run.run.extra["footer"]["out_of_bounds"] == 2
    assert run.run.env == {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5"}  # no *TOKEN*
    # ... and nowhere else in the record: argv and the command line say -x NCCL_FAKE_TOKEN=<hidden>
    assert "s3cret" not in json.dumps(run.run.to_dict())
    assert "NCCL_FAKE_TOKEN=<hidden>" in run.run.argv
    assert (run.run.nodes, run.run.ranks_per_node) == (2, 2)
    assert run.results[0].iters == 50
    assert any(w.startswith("line 27: not understood") for w in run.warnings)
    assert run.run.to_dict()["extra"]["warnings"] == run.warnings


@pytest.mark.parametrize(("name", "failed_sizes"), [
    ("old_rccl_error_column_asterisk.txt", [(32768, True, 2e-3)]),
    ("old_nccl_error_column_over_tolerance.txt", [(2097152, True, 1.0)]),
])
def test_old_error_column_kept_as_max_error(name: str,
                                            failed_sizes: list[tuple[int, bool, float]]) -> None:
    (run,) = _own(name)
    failed = [run.results[i] for i in run.run.extra["failed_results"]]
    assert [(r.size_bytes, r.in_place, r.max_error) for r in failed] == failed_sizes
    assert all(r.max_error is not None and r.max_error > 0 for r in failed)
    assert all(r.wrong is None for r in run.results)
    assert run.run.extra["footer"]["out_of_bounds_status"] == "FAILED"


def test_in_place_only_and_cut_rows_with_failure() -> None:
    (run,) = _own("broadcast_inplace_only_cut_short_failure.txt")
    assert [(r.size_bytes, r.in_place) for r in run.results] == [
        (1048576, False), (1048576, True), (4194304, True), (16777216, False)]
    assert {r.root for r in run.results} == {0}
    assert run.run.extra["failures"][0]["line"] == 21
    assert any(w.startswith("line 21: the log reports a failure: gpu-node-1: Test NCCL "
                            "failure") for w in run.warnings)


def test_per_iteration_columns_fill_min_and_max() -> None:
    gather, alltoall = _own("newest_per_iteration_and_timestamp_columns.txt")
    first = gather.results[0]
    assert (first.time_us, first.time_us_min, first.time_us_max, first.time_us_p50) == (
        30.25, 28.74, 36.3, None)
    assert alltoall.results[0].time_us_min is None
    assert gather.run.versions["nccl_tests_commit"] == "b4d5bee"


def test_unknown_world_size_is_zero_and_warned() -> None:
    runs = _own("no_program_name_seven_collectives.txt")
    assert [r.run.world_size for r in runs] == [8, 8, 8, 0, 0, 0, 8]
    assert [r.results[0].collective for r in runs] == [
        "reduce_scatter", "all_gather", "alltoall", "broadcast", "reduce", "sendrecv",
        "all_reduce"]
    assert any("world size unknown" in w for w in runs[3].warnings)
    assert [r.results[0].root for r in runs[3:5]] == [0, 0]


# ---------------------------------------------------------------------------------------------
# Inline variants
# ---------------------------------------------------------------------------------------------

_ROW = ("        1024           256     float     sum      -1    20.00    0.05    0.09      0"
        "    20.00    0.05    0.09      0\n")
_HEADER = ("#       size         count      type   redop    root     time   algbw   busbw #wrong"
           "     time   algbw   busbw #wrong\n")


def test_no_table_errors() -> None:
    with pytest.raises(LogImportError, match=r"^dir/x\.txt: no result table \(no line looks"):
        import_log("", "dir/x.txt")
    with pytest.raises(LogImportError, match=r"^y: the result table at line 2 has no rows"):
        import_log("# nThread 1 nGpus 1\n" + _HEADER, "y")


def test_a_failed_test_after_a_good_one_is_reported_on_the_good_one() -> None:
    text = ("# Collective test starting: all_reduce_perf\n" + _HEADER + _ROW +
            "# Out of bounds values : 0 OK\n# Collective test concluded: all_reduce_perf\n"
            "# Collective test starting: alltoall_perf\n"
            "h: Test NCCL failure common.cu:1279 'remote process exited'\n")
    (run,) = import_log(text, "mixed.txt")
    assert run.run.extra["tests_in_log"] == 2
    assert any(w.startswith("lines 6-7: alltoall_perf printed no result rows; the log reports a "
                            "failure at line 7") for w in run.warnings)


def test_old_format_rooted_collective_takes_root_from_the_command_line() -> None:
    text = ("$ mpirun -np 2 ./build/reduce_perf -b 1M -e 1M -r 1\n"
            "#       size         count      type   redop     time   algbw   busbw  error     "
            "time   algbw   busbw  error\n"
            "     1048576        262144     float     sum    20.00   52.43   52.43  0e+00    "
            "20.00   52.43   52.43  0e+00\n")
    (run,) = import_log(text, "reduce.txt")
    assert [r.root for r in run.results] == [1, 1]
    assert run.run.world_size == 2 and run.run.extra["world_size_method"].startswith("mpirun")
    assert [r.max_error for r in run.results] == [0.0, 0.0]


def test_records_round_trip_through_jsonl(tmp_path: Path) -> None:
    runs = _own("all_reduce_wrong_values_noise.txt") + _own("old_rccl_error_column_asterisk.txt")
    records = to_records(runs)
    assert [r["kind"] for r in records].count("run") == 2
    assert records[0]["kind"] == "run" and records[1]["kind"] == "result"
    write_records(tmp_path / "out.jsonl", records)
    back = read_records(tmp_path / "out.jsonl")
    assert back == json.loads(json.dumps(records))
    results = [read_record(BenchResult, r) for r in back if r["kind"] == "result"]
    assert results == _results(runs)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_nccl_tests_logs())
def test_mutated_logs_import_or_raise_log_import_error(text: str) -> None:
    try:
        runs = import_log(text, "mutated.txt")
    except LogImportError as error:
        assert str(error).startswith("mutated.txt: ")
        return
    for run in runs:
        assert len(run.run.extra["result_lines"]) == len(run.results)
        json.dumps(run.records(), allow_nan=False)
