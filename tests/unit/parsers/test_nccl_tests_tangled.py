"""nccl-tests logs as captured with their text tangled: a BOM on line 1 of a text log passed
as text, NCCL debug output glued in front of or injected into a result row."""

from __future__ import annotations

import pytest

from collscope.parsers.nccl_tests import parse_any, parse_nccl_tests
from tests.conftest import fixture_path

LOG = ("nccl-tests-logs", "h100_4node_default_nccl_issue309.txt")
ROW_1M = "     1048576        262144     float     sum      -1    317.0    3.31    6.41      0    93.26   11.24   21.78      0"  # noqa: E501
DEBUG = "0666a154:88455:88470 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"


def _log() -> str:
    text = fixture_path(*LOG).read_text()
    assert ROW_1M in text.splitlines()
    return text


def _row_1m(text: str):
    (test,) = parse_nccl_tests(text).value
    return test, [row for row in test.rows if row.size_bytes == 1048576]


def test_bom_on_a_text_log_keeps_line_1() -> None:
    # Line 1 of the log is the mpirun command line; a BOM glued to it hid it from the reader.
    kind, parsed = parse_any("\ufeff" + _log())
    (test,) = parsed.value
    assert test.commands and test.commands[0].text.startswith("mpirun -np 32 -N 8")
    assert test.commands[0].line == 1
    assert not any("line 1:" in w for w in parsed.warnings)


def test_debug_text_glued_before_a_row_keeps_the_row() -> None:
    clean = _log()
    glued = clean.replace(ROW_1M, DEBUG + ROW_1M)
    test, rows = _row_1m(glued)
    (row,) = rows
    assert (row.out_of_place.time_us, row.out_of_place.busbw_gbs) == (317.0, 6.41)
    assert (row.in_place.time_us, row.in_place.busbw_gbs) == (93.26, 21.78)
    assert len(test.rows) == len(_row_1m(clean)[0].rows)
    assert any("debug output before the result row of size 1048576" in w
               for w in test.warnings)


@pytest.mark.parametrize("debug", [
    DEBUG,                                     # host of the device list, starts with a digit
    DEBUG.replace("0666a154", "node9"),        # a host not in the device list
])
def test_debug_line_injected_into_a_row_is_rejoined(debug: str) -> None:
    clean = _log()
    head, rest = ROW_1M[:ROW_1M.index("317.0") + 5], ROW_1M[ROW_1M.index("317.0") + 5:]
    split = clean.replace(ROW_1M, head + debug + "\n" + rest)
    test, rows = _row_1m(split)
    (row,) = rows
    assert (row.out_of_place.time_us, row.out_of_place.algbw_gbs) == (317.0, 3.31)
    assert (row.in_place.time_us, row.in_place.wrong) == (93.26, 0)
    assert len(test.rows) == len(_row_1m(clean)[0].rows)
    assert any("split by NCCL/RCCL debug output, rejoined" in w for w in test.warnings)


def test_injected_debug_line_whose_rest_does_not_complete_the_row_stays_a_warning() -> None:
    clean = _log()
    head = ROW_1M[:ROW_1M.index("317.0") + 5]
    # The rest of the row never arrives: nothing is made up from the next line.
    test, rows = _row_1m(clean.replace(ROW_1M, head + DEBUG))
    assert all(row.in_place is None for row in rows)
    assert any("line 41:" in w for w in test.warnings)
    assert len(test.rows) in (len(_row_1m(clean)[0].rows) - 1, len(_row_1m(clean)[0].rows))


MI300X = ("nccl-tests-logs", "mi300x_8gpu_allreduce_rccl_k8s.txt")


def _interleaved(first: list[str], second: list[str]) -> str:
    """Two tasks' outputs as `srun -l` interleaves them, line by line, labelled 0: and 1:."""
    out = []
    for a, b in zip(first, second, strict=True):
        out += [f"0: {a}", f"1: {b}"]
    return "\n".join(out) + "\n"


def test_two_tests_interleaved_by_srun_labels_are_read_apart() -> None:
    # nccl-tests without MPI under `srun -l -n 2`: each task runs a whole test of its own.
    lines = fixture_path(*MI300X).read_text().splitlines()
    (alone,) = parse_nccl_tests("\n".join(lines)).value
    assert alone.hosts and len(alone.devices) == alone.world_size == 8
    row = next(line for line in lines if line.split()[:1] == ["1048576"])
    time_text = row.split()[5]
    slower = [line.replace(time_text, "99.99", 1) if line == row else line for line in lines]
    parsed = parse_nccl_tests(_interleaved(lines, slower))
    first, second = parsed.value
    for test in (first, second):
        assert len(test.rows) == len(alone.rows)               # each size once, not twice
        assert [d.rank for d in test.devices] == [d.rank for d in alone.devices]
        assert test.hosts == alone.hosts and test.world_size == alone.world_size
        assert not any("more than once" in w for w in test.warnings)
    assert (first.label, second.label) == ("srun task 0", "srun task 1")
    times = [next(r.out_of_place.time_us for r in t.rows if r.size_bytes == 1048576)
             for t in (first, second)]
    assert times == [float(time_text), 99.99]
    assert any("srun -l task 1's lines read apart" in w for w in parsed.warnings)


def test_srun_labels_of_one_mpi_test_are_not_split() -> None:
    # With MPI only task 0 prints the test; task 1 prints a launcher line: one test.
    lines = fixture_path(*MI300X).read_text().splitlines()
    noise = ["" for _ in lines]
    noise[0] = "cpu-bind=MASK - node1, task  1  1 [7086]: mask 0x2 set"
    text = "\n".join(f"0: {line}\n1: {extra}" if extra else f"0: {line}"
                     for line, extra in zip(lines, noise, strict=True))
    (test,) = parse_nccl_tests(text).value
    assert len(test.rows) == len(parse_nccl_tests("\n".join(lines)).value[0].rows)


@pytest.mark.serial   # bounds a wall time
def test_a_long_line_is_read_in_linear_time() -> None:
    # A header and one 64 kB row-like line: the host search before NCCL's debug marker once
    # tried a regex at every position (14.5 s on this line); now it walks back from markers.
    import time

    header = ("#       size         count      type   redop    root     time   algbw   busbw "
              "#wrong     time   algbw   busbw #wrong\n")
    line = "     1048576        262144     float     sum      -1 " + "7" * 65536 + "\n"
    started = time.perf_counter()
    parse_nccl_tests(header + line + "node1:1:2 [0] NCCL INFO x " + "1 " * 20000 + "\n")
    assert time.perf_counter() - started < 2.0
