"""nccl-tests / rccl-tests log parser: real logs (read in place), own samples, mutated text."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import strategies as st

from collscope.parsers.common import Parsed
from collscope.parsers.nccl_tests import (
    ParsedTest,
    Row,
    decode_nccl_version_code,
    error_tolerance,
    failed,
    guess_collective,
    parse_command_line,
    parse_nccl_tests,
    printed_unit,
)
from tests.conftest import FIXTURES, OWN_FIXTURES, fixture_path
from tests.unit.parsers import mutations

OWN = OWN_FIXTURES / "nccl-tests-logs"
REAL = FIXTURES / "nccl-tests-logs"
REAL_NAMES = mutations.REAL_NCCL_TESTS_LOGS
LINE_REF = re.compile(r"^lines? \d+")


def _real(name: str) -> tuple[list[ParsedTest], list[str]]:
    parsed = parse_nccl_tests(fixture_path("nccl-tests-logs", name).read_text())
    return parsed.value, parsed.warnings


def _own(name: str) -> tuple[list[ParsedTest], list[str]]:
    parsed = parse_nccl_tests((OWN / name).read_text())
    return parsed.value, parsed.warnings


def _one(tests: list[ParsedTest]) -> ParsedTest:
    assert len(tests) == 1
    return tests[0]


def _row(test: ParsedTest, size: int) -> Row:
    (row,) = [r for r in test.rows if r.size_bytes == size]
    return row


# ---------------------------------------------------------------------------------------------
# Every real log
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", REAL_NAMES)
def test_real_log_rows_all_read_and_warnings_name_lines(name: str) -> None:
    text = fixture_path("nccl-tests-logs", name).read_text()
    parsed = parse_nccl_tests(text)
    printed = mutations.count_printed_placements(text)
    assert sum(test.result_count for test in parsed.value) == printed
    for warning in parsed.warnings:
        assert LINE_REF.match(warning), warning
        assert "could not be read" not in warning and "analysis failed" not in warning
    # No line of a real log is left "not understood": each is known, noise or an elision.
    assert not [w for w in parsed.warnings if "not understood" in w]


def test_real_logs_present() -> None:
    assert len(REAL_NAMES) >= 11


# ---------------------------------------------------------------------------------------------
# Real logs, one by one
# ---------------------------------------------------------------------------------------------


def test_mi300x_8gpu_k8s_new_device_lines_old_version_line() -> None:
    tests, warnings = _real("mi300x_8gpu_allreduce_rccl_k8s.txt")
    test = _one(tests)
    assert test.program == "all_reduce_perf" and test.collective == "all_reduce"
    assert test.collective_source == "program name all_reduce_perf"
    assert test.versions == {"rccl_tests": "develop:a7809b3"}
    assert test.world_size == 8 and test.world_size_method.startswith("8 ranks")
    assert test.table_world_size == 8
    host = "1942ef50-8240-449e-82ca-4ce7993f70b4-78bfb5d4f4-4z9xh"
    assert test.hosts == [host]
    first = test.devices[0]
    assert (first.rank, first.group, first.pid, first.host, first.device, first.pci,
            first.name) == (0, 0, 7085, host, 0, "0000:05:00", "AMD Instinct MI300X")
    assert test.devices[7].pci == "0000:e5:00"
    params = test.params
    assert params is not None
    assert (params.n_thread, params.n_gpus, params.min_bytes, params.max_bytes,
            params.step_factor, params.warmup_iters, params.iters, params.agg_iters,
            params.validation, params.graph) == (1, 1, 8, 8589934592, 2, 5, 20, 1, 1, 0)
    assert test.command is not None and test.command.program == "all_reduce_perf"
    assert test.command.launcher == "mpirun" and test.command.launcher_ranks == 8
    assert test.command.test_args["-e"] == "8G" and test.command.test_args["-g"] == "1"
    assert len(test.rows) == 31 and test.result_count == 62
    row = _row(test, 8589934592)
    assert (row.count, row.dtype, row.redop, row.root) == (2147483648, "float", "sum", -1)
    assert row.line == 49
    assert row.in_place is not None and row.out_of_place is not None
    assert (row.in_place.time_us, row.in_place.algbw_gbs, row.in_place.busbw_gbs,
            row.in_place.wrong) == (47584.0, 180.52, 315.91, 0)
    assert (row.out_of_place.time_text, row.out_of_place.algbw_text,
            row.out_of_place.busbw_text) == ("47617", "180.40", "315.69")
    assert _row(test, 16777216).out_of_place.time_text == "149.9"  # type: ignore[union-attr]
    assert test.footer.out_of_bounds == 0 and test.footer.out_of_bounds_status == "OK"
    assert test.footer.avg_busbw_gbs == 110.464
    assert warnings == ["line 2: part of the log cut by whoever posted it ('<snip>')"]


def test_mi300x_2node_continued_command_rccl_versions_old_device_lines() -> None:
    tests, warnings = _real("mi300x_2node_16gpu_allreduce_rccl.txt")
    test = _one(tests)
    assert test.versions == {"rccl_tests": "develop:448c4c7", "rccl": "2.22.3-HEAD:7d8d67c",
                             "hip": "6.4.43484-123eb5128", "rocm": "6.4.2.0-120-e7d83f5"}
    assert test.info["hostname"] == "gpu-53"
    assert test.info["library_path"] == "/shared/apps/ubuntu/opt/rocm-6.4.2/lib/librccl.so.1"
    command = test.command
    assert command is not None and command.line == 1
    assert command.argv[-9:] == ["/shared/apps/ubuntu/rocm-6.3.4/rccl-tests/build/"
                                 "all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1"]
    assert command.launcher_ranks == 16
    assert command.env["UCX_NET_DEVICES"] == ("mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,"
                                              "mlx5_5:1,mlx5_6:1,mlx5_9:1")
    assert command.env["NCCL_IB_HCA"] == "^mlx5_bond_0"
    assert test.hosts == ["gpu-53", "gpu-56"]
    assert test.world_size == 16
    dev = test.devices[8]
    assert (dev.rank, dev.group, dev.pid, dev.host, dev.device, dev.pci) == (
        8, None, 366643, "gpu-56", 0, "0000:05:00.0")
    assert len(test.rows) == 32
    last = _row(test, 17179869184)
    assert last.out_of_place is not None and last.in_place is not None
    assert (last.out_of_place.time_us, last.out_of_place.busbw_gbs) == (90115.0, 357.46)
    assert (last.in_place.time_us, last.in_place.algbw_gbs, last.in_place.busbw_gbs) == (
        90127.0, 190.62, 357.41)
    assert test.footer.avg_busbw_gbs == 92.3318
    assert warnings == ["line 5: part of the log cut by whoever posted it ('<snip>')"]


def test_mi325x_egrep_filtered_separators_make_blocks_world_size_from_ratio() -> None:
    tests, warnings = _real("mi325x_1to8node_allreduce_rccl_egrep_filtered.txt")
    assert [t.label for t in tests] == ["1-node", "2-node", "4-node", "8-node"]
    assert [t.world_size for t in tests] == [8, 16, 32, 64]
    assert all(t.world_size_method.startswith("busbw/algbw = bus factor of all_reduce")
               for t in tests)
    assert all(t.collective == "all_reduce" and "guess" in t.collective_source for t in tests)
    assert all(len(t.rows) == 3 and t.header is None for t in tests)
    # The command lines before the first separator belong to every block.
    assert all(t.command and t.command.text.startswith("./rccl-test-allreduce-multi.sh")
               for t in tests)
    eight = _row(tests[3], 17179869184)
    assert eight.in_place is not None
    assert (eight.in_place.time_us, eight.in_place.algbw_gbs, eight.in_place.busbw_gbs) == (
        96498.0, 178.03, 350.5)
    assert len([w for w in warnings if "guessed from the word 'allreduce'" in w]) == 4


def test_mi355x_anp_empty_device_names_cycle_no_footer_columns_guess() -> None:
    tests, warnings = _real("mi355x_2node_16gpu_allreduce_rccl_anp_truncated.txt")
    test = _one(tests)
    assert test.program is None and test.collective == "all_reduce"
    assert test.collective_source.startswith("columns (guess")
    assert any("guessed from the columns" in w for w in warnings)
    assert [d.name for d in test.devices] == [None] * 16
    assert test.devices[0].pci == "0000:75:00" and test.devices[15].host == "mi355-gpu-24"
    assert test.world_size == 16
    assert test.versions["rccl"] == "2.26.6-HEAD:6ade506"
    assert test.versions["rocm"] == "7.0.1.0-42-9428210"
    assert test.versions["hip"] == "7.0.51831-a3e329ad8"
    assert test.versions["rccl_tests"] == "develop:5272cd1"
    assert test.footer.out_of_bounds is None and test.footer.avg_busbw_gbs is None
    assert {row.cycle for row in test.rows} == {1}
    assert len(test.rows) == 31
    row = _row(test, 8589934592)
    assert row.in_place is not None and row.in_place.busbw_gbs == 369.08


def test_mi355x_alltoall_odd_whitespace_in_place_na() -> None:
    tests, warnings = _real("mi355x_8gpu_alltoall_rccl_oci_rows_truncated.txt")
    test = _one(tests)
    assert test.program == "alltoall_perf" and test.collective == "alltoall"
    assert test.concluded and test.started
    assert test.world_size == 8 and test.table_world_size == 8
    assert {d.pid for d in test.devices} == {9878}
    assert test.params is not None and test.params.n_gpus == 8
    assert test.versions == {"rccl_tests": "HEAD:e1b8a3a"}
    assert [row.size_bytes for row in test.rows] == [8589934592, 17179869184]
    for row in test.rows:
        assert row.out_of_place is not None and row.in_place is not None
        assert row.out_of_place.wrong == 0 and row.out_of_place.checked
        assert row.in_place.wrong is None and row.in_place.check_text == "N/A"
    big = test.rows[1]
    assert (big.out_of_place.time_us, big.out_of_place.algbw_gbs,  # type: ignore[union-attr]
            big.out_of_place.busbw_gbs) == (41593.0, 413.05, 361.41)  # type: ignore[union-attr]
    assert test.footer.avg_busbw_gbs == 236.187
    assert warnings == []


def test_pollara_alltoall_program_from_concluded_world_size_from_counts() -> None:
    tests, warnings = _real("mi355x_pollara_4node_alltoall_rccl_oci_rows_truncated.txt")
    test = _one(tests)
    assert test.program == "alltoall_perf"
    assert test.devices == [] and test.world_size == 32
    assert test.world_size_method.startswith("size / (count x element size)")
    assert warnings == ["line 4: rows or lines left out by whoever posted the log: "
                        "'# <smaller message sizes truncated>'"]
    assert _row(test, 17179869184).in_place.time_us == 327875.0  # type: ignore[union-attr]


def test_gb300_elided_device_block() -> None:
    tests, warnings = _real("gb300_32node_128gpu_allreduce_nccl_oci_truncated.txt")
    test = _one(tests)
    assert test.devices_elided
    assert [d.rank for d in test.devices] == [0, 1, 126, 127]
    assert test.hosts == ["GPU-5705", "GPU-391"]
    assert {d.name for d in test.devices} == {"NVIDIA GB300"}
    assert test.world_size == 128 and test.table_world_size == 128
    assert test.world_size_method == "highest rank in the elided device block + 1"
    assert test.versions == {"nccl": "2.28.7+cuda13.0"}
    assert test.params is not None and (test.params.warmup_iters, test.params.iters) == (1, 50)
    row = _row(test, 17179869184)
    assert row.in_place is not None
    assert (row.in_place.time_us, row.in_place.algbw_gbs, row.in_place.busbw_gbs) == (
        46070.0, 372.91, 739.99)
    assert test.footer.avg_busbw_gbs == 300.755
    assert [w.split(":")[0] for w in warnings] == ["line 7", "line 15"]


def test_h100_gcp_markdown_stripped_hashes() -> None:
    tests, warnings = _real("h100_2node_16gpu_allreduce_gcp_a3mega_hash_stripped.txt")
    test = _one(tests)
    assert test.params is not None and test.params.line == 1 and test.params.iters == 20
    assert len(test.devices) == 16 and test.devices[0].line == 4
    assert test.hosts == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert {d.name for d in test.devices} == {"NVIDIA H100 80GB HBM3"}
    assert test.collective == "all_reduce" and test.world_size == 16
    assert len(test.rows) == 31
    assert _row(test, 8589934592).out_of_place.busbw_gbs == 338.82  # type: ignore[union-attr]
    assert test.footer.avg_busbw_gbs == 70.742
    assert len(warnings) == 1 and "guessed from the columns" in warnings[0]


def test_h100_10node_five_tests_in_one_file() -> None:
    tests, warnings = _real("h100_10node_80gpu_5collectives_nccl.txt")
    assert [t.program for t in tests] == ["all_reduce_perf", "all_gather_perf",
                                          "reduce_scatter_perf", "alltoall_perf",
                                          "sendrecv_perf"]
    assert [t.collective for t in tests] == ["all_reduce", "all_gather", "reduce_scatter",
                                             "alltoall", "sendrecv"]
    assert [(t.first_line, t.concluded) for t in tests][:2] == [(1, True), (108, True)]
    for test in tests:
        assert test.world_size == 80 and len(test.hosts) == 10 and len(test.rows) == 10
        assert test.versions == {"nccl_tests": "2.17.8", "nccl_headers": "2.29.2",
                                 "nccl": "2.29.2"}
        assert test.reduced_max_bytes == 26549638485
        assert test.hosts[0] == "cnode3-002" and test.hosts[-1] == "cnode3-011"
    assert [t.table_world_size for t in tests] == [80, 80, 80, 80, None]
    gather = tests[1].rows[0]
    assert (gather.size_bytes, gather.count, gather.dtype, gather.redop) == (
        33553920, 52428, "double", "none")
    assert gather.out_of_place.time_text == "682.20"  # type: ignore[union-attr]
    sendrecv_last = tests[4].rows[-1]
    assert sendrecv_last.out_of_place.time_us == 1128428.0  # type: ignore[union-attr]
    assert sendrecv_last.in_place.wrong is None  # type: ignore[union-attr]
    assert [t.footer.avg_busbw_gbs for t in tests] == [265.631, 218.677, 216.683, 47.1472,
                                                        15.1671]
    assert warnings == []


def test_h100_network_error_two_tests_without_rows() -> None:
    tests, warnings = _real("h100_2node_16gpu_alltoall_sendrecv_nccl_network_error.txt")
    assert [t.program for t in tests] == ["alltoall_perf", "sendrecv_perf"]
    assert [t.rows for t in tests] == [[], []]
    assert [t.world_size for t in tests] == [16, 16]
    assert tests[0].failures[0] == (
        22, "cnode2-002: Test NCCL failure common.cu:1279 'remote process exited or there was "
            "a network error / '")
    assert tests[0].failures[1] == (23, ".. cnode2-002 pid 303561: Test failure common.cu:1100")
    assert len(tests[0].failures) == 6 and len(tests[1].failures) == 16
    assert tests[1].first_line == 28
    assert warnings == []


def test_t4_old_format_error_column() -> None:
    tests, warnings = _real("t4_3node_allreduce_nccl_old_error_column_c0.txt")
    test = _one(tests)
    assert test.header is not None and test.header.old_format and not test.header.has_root
    assert test.params is not None
    assert (test.params.step_bytes, test.params.iters, test.params.validation,
            test.params.agg_iters) == (1048576, 1, 0, None)
    assert [(d.rank, d.host, d.pci, d.name) for d in test.devices] == [
        (0, "gpu01", "0x00", "Tesla T4"), (1, "gpu02", "0x00", "Tesla T4"),
        (2, "gpu03", "0x00", "Tesla T4")]
    assert test.world_size == 3 and test.table_world_size == 3
    command = test.command
    assert command is not None and command.launcher == "srun" and command.launcher_ranks is None
    assert command.env == {"OMPI_MCA_btl_tcp_if_include": "ens5", "OMPI_MCA_pml": "^ucx",
                           "NCCL_SOCKET_IFNAME": "ens"}
    assert command.test_args == {"-b": "100M", "-e": "110M", "-c": "0", "-n": "1"}
    assert len(test.rows) == 11
    first = test.rows[0]
    assert first.root is None and first.out_of_place is not None
    assert (first.out_of_place.time_us, first.out_of_place.algbw_gbs,
            first.out_of_place.busbw_gbs, first.out_of_place.error,
            first.out_of_place.wrong, first.out_of_place.check_text) == (
        202872.0, 0.52, 0.69, None, None, "N/A")
    assert test.footer.avg_busbw_gbs == 0.58536
    assert warnings == []


# ---------------------------------------------------------------------------------------------
# Own samples (tests/fixtures/nccl-tests-logs)
# ---------------------------------------------------------------------------------------------


def test_wrong_values_and_noise_inside_the_table() -> None:
    tests, warnings = _own("all_reduce_wrong_values_noise.txt")
    test = _one(tests)
    assert test.versions == {"nccl_tests": "2.20.0", "nccl_tests_commit": "b4d5bee",
                             "nccl_headers": "2.31.2", "nccl": "2.31.2"}
    assert test.command is not None and test.command.program == "all_reduce_perf"
    assert test.command.env == {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5",
                                "NCCL_FAKE_TOKEN": "s3cret"}
    assert test.command.test_args["-n"] == "50"
    assert test.params is not None and test.params.unalign == 0 and test.params.iters == 50
    assert len(test.rows) == 6
    assert _row(test, 65536).in_place.wrong == 12  # type: ignore[union-attr]
    big = _row(test, 1048576).out_of_place
    assert big is not None and big.check_text == "1.04858e+06" and big.wrong == 1048580
    assert test.footer.out_of_bounds == 2 and test.footer.out_of_bounds_status == "FAILED"
    assert sum(failed(p, r.dtype, test.world_size) for r in test.rows
               for _, p in r.placements()) == 2
    assert warnings == [
        "lines 3-4: 2 lines of launcher/MPI output skipped, first: '[nodeA:01234] 1 more "
        "process has sent help message help-mpi-btl-openib.txt / no active ports found'",
        "lines 14-15: 2 lines of NCCL/RCCL debug output skipped, first: 'nodeA:11001:11001 [0] "
        "NCCL INFO NCCL version 2.31.2+cuda12.9'",
        "lines 23-25: 3 lines of NCCL/RCCL debug output skipped, first: 'nodeA:11001:11050 [0] "
        "NCCL INFO Channel 00/02 :    0   1   2   3'",
        "line 27: not understood: 'this line is not from nccl-tests'",
    ]


def test_old_rccl_format_asterisk_marks_errors_over_threshold() -> None:
    tests, warnings = _own("old_rccl_error_column_asterisk.txt")
    test = _one(tests)
    assert test.params is not None
    assert (test.params.n_thread, test.params.n_gpus, test.params.warmup_iters,
            test.params.iters, test.params.step_factor) == (1, 4, 5, 20, 8)
    assert [d.pci for d in test.devices] == ["0x03", "0x23", "0x43", "0x63"]
    assert test.world_size == 4 and test.hosts == ["mi100-01"]
    bad = _row(test, 32768).in_place
    assert bad is not None and bad.over_threshold and bad.error == 2e-3
    assert bad.check_text == "2e-03*"
    assert _row(test, 4096).out_of_place.error == 4e-7  # type: ignore[union-attr]
    assert [r.line for r in test.rows for _, p in r.placements()
            if failed(p, r.dtype, test.world_size)] == [17]
    assert test.footer.out_of_bounds == 1 and test.footer.out_of_bounds_status == "FAILED"
    assert warnings == []


def test_old_nccl_format_error_over_tolerance_without_asterisk() -> None:
    tests, warnings = _own("old_nccl_error_column_over_tolerance.txt")
    test = _one(tests)
    assert test.command is not None and test.command.launcher_ranks == 3  # -N 3 x 1 per node
    over = _row(test, 2097152).in_place
    assert over is not None and over.error == 1.0 and not over.over_threshold
    assert failed(over, "float", 3)
    within = _row(test, 8388608).out_of_place
    assert within is not None and within.error == 5e-6 and not failed(within, "float", 3)
    assert warnings == []


def test_in_place_only_row_row_cut_short_and_failure() -> None:
    tests, warnings = _own("broadcast_inplace_only_cut_short_failure.txt")
    test = _one(tests)
    assert test.collective == "broadcast" and test.world_size == 8
    assert test.versions["nccl"] == "2.19.3"
    only_in = _row(test, 4194304)
    assert only_in.out_of_place is None and only_in.in_place is not None
    assert only_in.in_place.time_us == 45.1 and only_in.root == 0
    cut = _row(test, 16777216)
    assert cut.in_place is None and cut.out_of_place is not None
    assert cut.out_of_place.busbw_gbs == 111.7
    assert test.result_count == 4
    assert [line for line, _ in test.failures] == [21, 22]
    assert test.footer.out_of_bounds is None
    assert len(warnings) == 1
    assert warnings[0].startswith("line 20: row cut short: second placement incomplete")


@pytest.mark.parametrize(("index", "collective", "world_size"), [
    (0, "reduce_scatter", 8), (1, "all_gather", 8), (2, "alltoall", 8), (3, "broadcast", None),
    (4, "reduce", None), (5, "sendrecv", None), (6, "all_reduce", 8)])
def test_collective_and_world_size_from_the_columns(index: int, collective: str,
                                                    world_size: int | None) -> None:
    tests, warnings = _own("no_program_name_seven_collectives.txt")
    assert len(tests) == 7
    test = tests[index]
    assert test.label == f"run {'ABCDEFG'[index]}"
    assert test.collective == collective
    assert test.collective_source.startswith("columns (guess")
    assert test.world_size == world_size
    assert guess_collective(test.rows)[0] == collective
    assert any(w.startswith(f"line {test.rows[0].line}: no program name; collective "
                            f"{collective} guessed") for w in warnings)


def test_newest_format_per_iteration_columns_and_timestamps() -> None:
    tests, warnings = _own("newest_per_iteration_and_timestamp_columns.txt")
    assert [t.program for t in tests] == ["all_gather_perf", "alltoall_perf"]
    gather, alltoall = tests
    assert gather.header is not None and len(gather.header.groups[0]) == 8
    row = gather.rows[0]
    assert row.out_of_place is not None and row.in_place is not None
    assert row.out_of_place.more == {"i_min": "28.74", "i_max": "36.30", "i_p99": "34.79",
                                     "i_cv%": "3.21"}
    assert (row.in_place.time_us, row.in_place.busbw_gbs) == (29.9, 105.21)
    assert alltoall.header is not None and alltoall.header.timestamp
    assert alltoall.header.groups[0][0] == "cputime"
    assert [r.timestamp for r in alltoall.rows] == ["2025-06-01 10:00:01",
                                                    "2025-06-01 10:00:02"]
    assert alltoall.rows[1].in_place.busbw_gbs == 93.87  # type: ignore[union-attr]
    assert [t.world_size for t in tests] == [4, 4] and [t.table_world_size for t in tests] == [4, 4]
    assert warnings == []


# ---------------------------------------------------------------------------------------------
# Small variants, inline
# ---------------------------------------------------------------------------------------------

_NEW_HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n")


def test_empty_and_blank_text() -> None:
    assert parse_nccl_tests("").value == []
    assert parse_nccl_tests("\n\n#\n").value == []


def test_open_mpi_tag_output_prefixes_are_removed() -> None:
    text = ("[1,0]<stdout>:# Collective test starting: all_reduce_perf\n"
            "[1,0]<stdout>:" + _NEW_HEADER +
            "[1,0]<stdout>:        1024           256     float     sum      -1    20.00    0.05"
            "    0.09      0    20.00    0.05    0.09      0\n")
    test = _one(parse_nccl_tests(text).value)
    assert test.program == "all_reduce_perf" and test.result_count == 2


def test_duplicate_ranks_warn_about_a_build_without_mpi() -> None:
    text = ("# Using devices\n"
            "#  Rank  0 Group  0 Pid  100 on h device  0 [0000:01:00] GPU\n"
            "#  Rank  0 Group  0 Pid  101 on h device  0 [0000:01:00] GPU\n")
    parsed = parse_nccl_tests(text)
    assert parsed.value[0].world_size == 1
    assert any("printed more than once" in w for w in parsed.warnings)


def test_footer_variants_and_error_comment() -> None:
    text = ("# Collective test starting: all_reduce_perf\n" + _NEW_HEADER +
            "        1024           256     float     sum      -1    20.00    0.05    0.09"
            "      0    20.00    0.05    0.09      0\n"
            "# Out of bounds values : 0 OK\n"
            "# Bitwise mismatches   : 3 FAILED\n"
            "# Avg bus bandwidth    : 0.09 FAILED\n"
            "# error: remote process exited\n")
    test = _one(parse_nccl_tests(text).value)
    assert (test.footer.avg_busbw_gbs, test.footer.avg_busbw_status) == (0.09, "FAILED")
    assert (test.footer.bitwise_mismatches, test.footer.bitwise_status) == (3, "FAILED")
    assert test.failures == [(7, "# error: remote process exited")]


def test_rows_without_header_old_layout_and_a_following_test() -> None:
    text = ("   104857600      26214400     float     sum   202872    0.52    0.69    N/A   224616"
            "    0.47    0.62    N/A\n"
            "# Out of bounds values : 0 OK\n"
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
            + _NEW_HEADER +
            "           8             2     float     sum      -1    19.28    0.00    0.00      0"
            "    17.24    0.00    0.00      0\n")
    tests = parse_nccl_tests(text).value
    assert len(tests) == 2
    assert tests[0].rows[0].root is None and tests[0].rows[0].in_place.time_us == 224616.0  # type: ignore[union-attr]
    assert tests[1].rows[0].root == -1 and tests[1].params is not None


def test_unknown_lines_and_cut_rows_are_warned_with_line_numbers() -> None:
    text = (_NEW_HEADER +
            "        1024           256     float     sum      -1    20.00    0.05\n"
            "        2048           512     float     sum      xx    20.00    0.05    0.09  0\n"
            "random words here\n"
            "# a comment nccl-tests never prints\n")
    parsed = parse_nccl_tests(text)
    assert parsed.value[0].rows == []
    assert [w.split(":")[0] for w in parsed.warnings] == ["line 2", "line 3", "line 4",
                                                          "line 5"]


def test_command_continuation_cut_by_the_paste_ends_at_the_next_log_line() -> None:
    text = ("$ mpirun -np 2 \\\n"
            "    ./build/all_reduce_perf -b 8 \\\n"
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n")
    test = _one(parse_nccl_tests(text).value)
    assert test.command is not None and test.command.program == "all_reduce_perf"
    assert test.command.argv == ["mpirun", "-np", "2", "./build/all_reduce_perf", "-b", "8"]
    assert test.params is not None and test.params.line == 3


def test_helpers() -> None:
    assert printed_unit("12.34") == pytest.approx(0.01)
    assert printed_unit("47584") == 1.0
    assert printed_unit("1.2e+06") == pytest.approx(1e5)
    assert decode_nccl_version_code(22902) == "2.29.2"
    assert decode_nccl_version_code(2708) == "2.7.8"
    assert error_tolerance("float", 4) == pytest.approx(3e-5)
    assert error_tolerance("int32", 4) == 0.0
    assert error_tolerance("mystery", 4) is None and error_tolerance("float", None) is None


def test_command_line_forms() -> None:
    cmd = parse_command_line("NCCL_ALGO=Ring mpirun -np 16 -genv NCCL_PROTO Simple "
                             "-x UCX_TLS=rc ./build/all_gather_perf -b 8 -e 1G -g8 --op=sum")
    assert cmd.program == "all_gather_perf" and cmd.launcher == "mpirun"
    assert cmd.launcher_ranks == 16
    assert cmd.env == {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "UCX_TLS": "rc"}
    assert cmd.test_args == {"-b": "8", "-e": "1G", "-g": "8", "--op": "sum"}
    srun = parse_command_line("srun --ntasks=32 --export=ALL,NCCL_IB_HCA=mlx5_0,mlx5_1 "
                              "alltoall_perf_mpi -b 1M")
    assert srun.program == "alltoall_perf_mpi" and srun.launcher_ranks == 32
    assert srun.env == {"NCCL_IB_HCA": "mlx5_0,mlx5_1"}
    assert parse_command_line("echo 'unbalanced").program is None


# ---------------------------------------------------------------------------------------------
# Mutated and arbitrary text never breaks the parser
# ---------------------------------------------------------------------------------------------


SAMPLES = mutations.nccl_tests_samples()
_NOISE = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=60)


def _check(_parser: object, parsed: Parsed[Any]) -> None:
    for warning in parsed.warnings:
        assert LINE_REF.match(warning) or warning.startswith("test "), warning
        assert "could not be read" not in warning and "analysis failed" not in warning
    for test in parsed.value:
        assert test.result_count == sum(len(r.placements()) for r in test.rows)
        for row in test.rows:
            for _, p in row.placements():
                assert all(map(lambda v: v == v and abs(v) != float("inf"),
                               (p.time_us, p.algbw_gbs, p.busbw_gbs)))


@pytest.mark.skipif(not SAMPLES, reason="no sample logs")
def test_mutated_logs_never_raise() -> None:
    mutations.assert_parsers_never_raise([parse_nccl_tests],
                                         mutations.mutated_nccl_tests_logs(), check=_check,
                                         max_examples=80)


def test_arbitrary_lines_never_raise() -> None:
    lines = st.lists(st.one_of(_NOISE, st.sampled_from(_NEW_HEADER.splitlines() + [
        "# Using devices", "...", "====== x ======", "$ ./all_reduce_perf \\", "# Collective test "
        "concluded: x", "   8  2  float  sum  -1  1.0  0.00  0.00  0  1.0  0.00  0.00  0",
        "# Out of bounds values : 1 FAILED"])), max_size=30)
    mutations.assert_parsers_never_raise([parse_nccl_tests], lines.map("\n".join),
                                         check=_check)




def test_collscope_own_table_reads_back_without_warnings_about_na_or_cpu_devices() -> None:
    """collscope bench prints N/A for a placement torch lacks and device -1 for CPU ranks."""
    text = (OWN_FIXTURES / "nccl-tests-logs" / "collscope_bench_cpu_na_placement.txt").read_text()
    parsed = parse_nccl_tests(text)
    (test,) = parsed.value
    assert [w for w in parsed.warnings if "not understood" in w or "cut short" in w] == []
    assert test.result_count == 2
    assert len(test.devices) == 2
