"""nccl-tests logs as captured with their text tangled: a BOM on line 1 of a text log passed
as text, NCCL debug output glued in front of or injected into a result row."""

from __future__ import annotations

import pytest

from collscope.parsers.nccl_tests import parse_any, parse_nccl_tests
from tests.conftest import shared_fixture

LOG = ("nccl-tests-logs", "h100_4node_default_nccl_issue309.txt")
ROW_1M = "     1048576        262144     float     sum      -1    317.0    3.31    6.41      0    93.26   11.24   21.78      0"  # noqa: E501
DEBUG = "0666a154:88455:88470 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"


def _log() -> str:
    text = shared_fixture(*LOG).read_text()
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
