"""rccl-tests' result file (``-Z csv|json`` with ``-x FILE``; the Reporter class of rccl-tests'
``src/common.cu``) as the same typed records as the text log.

One record per placement. CSV: the header ``numCycle,collective,nodes,ranks,ranksPerNode,
gpusPerRank,size,type,redop,inplace,time,algbw,busbw,#wrong`` (an MPI build; without MPI
``gpus`` replaces the four layout columns), strings quoted (``"AllReduce"``, ``"float"``,
``"sum"``, ``"0"`` or ``"N/A"``), numbers as ``std::to_string`` prints them (``%f``). JSON: a
list of objects with the keys ``numCycle, name, nodes, ranks, ranksPerNode, gpusPerRank`` (or
``gpus``), ``size, type, redop, inPlace, time, algBw, busBw, wrong``. There is no count column:
it is the size over the element size (and over the ranks for chunked collectives), as
nccl-tests prints it. Records of one collective and world size make one test; a test's rows
join each size's out-of-place and in-place records, in file order per cycle.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from collscope.collectives.table import COLLECTIVES, canonical_name
from collscope.parsers.common import Parsed
from collscope.parsers.nccl_tests.json_output import load_lenient
from collscope.parsers.nccl_tests.records import (
    ParsedTest,
    Placement,
    Row,
    element_size,
    parse_int,
    parse_num,
)

CSV_FIRST = "numCycle,collective,"
# CSV header name -> the JSON key of the same column.
_CSV_TO_JSON = {"collective": "name", "inplace": "inPlace", "algbw": "algBw", "busbw": "busBw",
                "#wrong": "wrong"}


def looks_like_rccl_csv(text: str) -> bool:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first.replace(" ", "").startswith(CSV_FIRST)


def looks_like_rccl_json(text: str) -> bool:
    head = text.lstrip()[:2048]
    return head.startswith("[") and '"busBw"' in head and '"numCycle"' in head


def _records_csv(text: str) -> list[tuple[int, dict[str, str]]]:
    reader = csv.reader(io.StringIO(text))
    rows = [(number, row) for number, row in enumerate(reader, start=1) if row]
    if not rows:
        return []
    names = [_CSV_TO_JSON.get(name.strip(), name.strip()) for name in rows[0][1]]
    return [(number, dict(zip(names, (v.strip() for v in values))))
            for number, values in rows[1:]]


def _records_json(text: str, warnings: list[str]) -> list[tuple[int, dict[str, str]]]:
    data, problems = load_lenient(text)
    warnings.extend(problems)
    if not isinstance(data, list):
        return []
    return [(index, {k: str(v) for k, v in entry.items()})
            for index, entry in enumerate(data) if isinstance(entry, dict)]


def parse_rccl_reporter(text: str, kind: str) -> Parsed[list[ParsedTest]]:
    """Tests of an rccl-tests ``-Z csv`` (``kind`` "csv") or ``-Z json`` file."""
    warnings: list[str] = []
    records = _records_csv(text) if kind == "csv" else _records_json(text, warnings)
    where = "line" if kind == "csv" else "record"
    tests: dict[tuple[str, int | None], ParsedTest] = {}
    pending: dict[tuple[str, int | None], dict[tuple[Any, ...], Row]] = {}
    for number, record in records:
        line = number if kind == "csv" else 1
        name = record.get("name", "").strip('"')
        collective = canonical_name(name) or name.lower() or "unknown"
        ranks = parse_int(record.get("ranks", record.get("gpus", "")))
        key = (collective, ranks)
        test = tests.get(key)
        if test is None:
            test = tests[key] = ParsedTest(index=len(tests), first_line=line, program=None)
            test.collective = collective if collective in COLLECTIVES else None
            test.collective_source = f"collective column {name!r}"
            test.world_size = ranks
            test.world_size_method = ("ranks column" if "ranks" in record else "gpus column")
            test.nodes = parse_int(record.get("nodes", ""))
            test.ranks_per_node = parse_int(record.get("ranksPerNode", ""))
            test.started = test.concluded = True
            test.info["written_by"] = f"rccl-tests -Z {kind}"
            pending[key] = {}
        test.last_line = line
        row, problem = _placement_row(record, collective, ranks, line, pending[key])
        if problem:
            warnings.append(f"{where} {number}: {problem}; skipped")
        elif row is not None:
            test.rows.append(row)
    for test in tests.values():
        test.warnings = [w for w in warnings if w]
    return Parsed(value=list(tests.values()), warnings=warnings)


def _placement_row(record: dict[str, str], collective: str, ranks: int | None, line: int,
                   open_rows: dict[tuple[Any, ...], Row]) -> tuple[Row | None, str]:
    """Add one record to its row (a new Row when it opens one); the problem, if any."""
    size = parse_int(record.get("size", ""))
    dtype = record.get("type", "").strip('"')
    redop = record.get("redop", "").strip('"') or "none"
    in_place = record.get("inPlace", "").strip() == "1"
    texts = [record.get(k, "").strip() for k in ("time", "algBw", "busBw")]
    time_us, algbw, busbw = (parse_num(t) for t in texts)
    if size is None or time_us is None or algbw is None or busbw is None:
        return None, f"size/time/algbw/busbw not numbers ({[record.get('size'), *texts]})"
    wrong_text = record.get("wrong", "").strip('"')
    wrong = parse_int(wrong_text)
    placement = Placement(time_us=time_us, algbw_gbs=algbw, busbw_gbs=busbw, wrong=wrong,
                          error=None,
                          time_text=texts[0], algbw_text=texts[1], busbw_text=texts[2],
                          check_text=wrong_text or None)
    cycle = parse_int(record.get("numCycle", ""))
    key = (cycle, size, dtype, redop)
    row = open_rows.get(key)
    if row is None or getattr(row, "in_place" if in_place else "out_of_place") is not None:
        row = Row(line=line, size_bytes=size, count=_count(size, dtype, collective, ranks),
                  dtype=dtype, redop=redop, root=None, out_of_place=None, in_place=None,
                  cycle=cycle)
        open_rows[key] = row
        setattr(row, "in_place" if in_place else "out_of_place", placement)
        return row, ""
    setattr(row, "in_place" if in_place else "out_of_place", placement)
    return None, ""


def _count(size: int, dtype: str, collective: str, ranks: int | None) -> int:
    """nccl-tests' count column: elements per rank for chunked collectives, else elements."""
    width = element_size(dtype) or 1
    chunks = ranks if collective in COLLECTIVES and COLLECTIVES[collective].chunked and ranks \
        else 1
    return size // (width * chunks)
