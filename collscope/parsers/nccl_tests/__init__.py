"""Parser of nccl-tests / rccl-tests text output, any version: text -> typed records.

What it reads (all optional, in any order nccl-tests ever printed them):

- the command line, from a shell prompt (``$ mpirun ... ./build/all_reduce_perf -b 8 ...``,
  ``user@host:~$ ...``, ``+ ...``; backslash continuation lines are joined) or from a bare line
  that starts with a launcher or a ``*_perf`` binary;
- version lines: ``# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902``,
  ``rccl-tests: Version develop:a7809b3``, ``RCCL version : 2.22.3-HEAD:7d8d67c``,
  ``HIP version  : ...``, ``ROCm version : ...``, ``NCCL version 2.28.7+cuda13.0`` (also inside
  NCCL debug lines), ``Hostname     : ...``, ``Librccl path : ...``;
- ``# Collective test starting: all_reduce_perf`` / ``# Collective test concluded: ...``;
- the parameter line, new (``# nThread 1 nGpus 1 minBytes 8 ... warmup iters: 5 iters: 20 agg
  iters: 1 validation: 1 graph: 0``) and old (``# nThread: 1 nGpus: 1 ... warmupIters: 5``);
- the ``# Using devices`` block, old (``#   Rank  0 Pid  30938 on gpu01 device  0 [0x00] Tesla
  T4``) and new (``#  Rank  0 Group  0 Pid 7085 on host device  0 [0000:05:00] AMD Instinct
  MI300X``) forms, with empty device names and ``...`` elision;
- the table header, new (``root`` and ``#wrong`` columns, optionally ``#bitdiff``, the
  per-iteration ``i_min i_max i_p99 i_cv%`` columns, ``cputime`` and a ``timestamp``) and old (no
  ``root`` column, ``error`` column); the columns of each row are read by the header's names;
- result rows, with both placements, only the out-of-place one (run cut short) or only the
  in-place one (nccl-tests leaves the out-of-place part blank in trace replay); which one a
  single placement is comes from its column position under the header;
- the footer (``# Out of bounds values : N OK|FAILED``, ``# Avg bus bandwidth : X [OK|FAILED]``,
  ``# Bitwise mismatches : N OK|FAILED``), ``# Reducing maxBytes ...``, ``# Testing N cycle.``;
- failure lines (``Test NCCL failure common.cu:1279 '...'``, ``# error: ...``, launcher aborts).

Captured logs often carry a prefix on every line (``srun -l`` task labels, ``mpirun
--tag-output`` tags, time stamps, ``kubectl logs --prefix``): the prefix shared by nccl-tests'
own lines is found and stripped first (``prefixes.py``); shell ``set -x`` traces (``+ cmd``)
are command lines, ``cpu-bind=...`` lines launcher output, and a line of options right after a
command line is its wrapped rest.

Posted logs are often edited: markdown may strip the leading ``# `` of header lines, grep may
keep only some rows (with ``====== N-node ======`` separators: each separator starts a new test
block labelled with its text, inheriting the command line and versions before it), authors cut
parts (``<snip>``, ``# <smaller message sizes truncated>``), launchers and NCCL debug output
interleave their lines. Every line that is not understood, and every known elision, becomes a
warning naming its line number (runs of the same kind of noise are reported as one range).
Nothing here raises on odd input.

Several tests in one file (one ``*_perf`` run after another) become several ``ParsedTest``
blocks: a new block starts when a line that opens a test (version line, ``Collective test
starting``, parameter line, ``Using devices``) arrives in a block that already has that kind of
line, a result table or ``Collective test concluded``; a table header, a separator or a command
line start one when the block already has a table (a header: rows or a footer); a result row
starts one after a footer or ``concluded``.

Which collective a block measured, in order of trust:

1. the program name of ``# Collective test starting/concluded: X_perf``;
2. the ``*_perf`` binary on the command line;
3. a collective's name as a word of the command line (``rccl-test-allreduce-multi.sh``): a guess,
   warned about;
4. the columns (a guess, warned about): with E the element size of the type column, a count
   column with size = count x E x n (n > 1) means a chunked collective with n ranks:
   ``reduce_scatter`` when redop is a reduction, else ``alltoall`` when the in-place ``#wrong`` is
   N/A while the out-of-place one is checked (nccl-tests does not verify in-place alltoall), else
   ``all_gather``; size = count x E means an unchunked one: with a root >= 0, ``reduce``
   (reduction) or ``broadcast`` (redop none); with root -1 and a reduction, ``all_reduce`` when
   busbw/algbw > 1.1 (its bus factor 2(n-1)/n), else ``sendrecv`` when in-place is not verified,
   else ``all_reduce`` on 2 ranks (bus factor 1 either way). Anything else stays unknown.

The world size (``ParsedTest.world_size`` with ``world_size_method`` saying how): the number of
distinct ranks in the device block; the highest rank + 1 when that block is elided; launcher
ranks (``mpirun -np N``, ``srun -n N``) x nThread x nGpus; size / (count x E) for a chunked
collective; the busbw/algbw ratio inverted through the collective's bus factor, kept only when
exactly one world size reproduces every printed busbw to the printed precision. When the device
block and the table disagree, a warning says so.

Printed numbers are kept exactly: floats parsed from the text plus the printed strings.
"""

from __future__ import annotations

import math
import re

from collscope.collectives.table import COLLECTIVES, bus_factor
from collscope.parsers.common import Parsed
from collscope.parsers.nccl_tests.command_line import parse_command_line
from collscope.parsers.nccl_tests.inference import (
    decide,
    failed,
    guess_collective,
    world_size_from_ratio,
)
from collscope.parsers.nccl_tests.json_output import (
    looks_like_nccl_tests_json,
    parse_nccl_tests_json,
)
from collscope.parsers.nccl_tests.prefixes import strip_prefix
from collscope.parsers.nccl_tests.rccl_reporter import (
    looks_like_rccl_csv,
    looks_like_rccl_json,
    parse_rccl_reporter,
)
from collscope.parsers.nccl_tests.reader import Reader
from collscope.parsers.nccl_tests.records import (
    ELEMENT_SIZES,
    REDUCTION_OPS,
    CommandLine,
    DeviceLine,
    Footer,
    ParsedTest,
    Placement,
    Row,
    TableHeader,
    TestParams,
    clip,
    decode_nccl_version_code,
    element_size,
    error_tolerance,
    printed_unit,
)
from collscope.parsers.nccl_tests.tasks import split_tasks

__all__ = [
    "ELEMENT_SIZES", "REDUCTION_OPS", "CommandLine", "DeviceLine", "Footer", "ParsedTest",
    "Placement", "Row", "TableHeader", "TestParams", "decode_nccl_version_code",
    "element_size", "error_tolerance", "failed", "guess_collective", "parse_command_line",
    "parse_nccl_tests", "printed_unit", "world_size_from_ratio", "detect_format", "parse_any",
    "TEXT", "NCCL_TESTS_JSON", "RCCL_TESTS_CSV", "RCCL_TESTS_JSON",
]


def _line_of(message: str) -> int:
    match = re.match(r"lines? (\d+)", message)
    return int(match.group(1)) if match else 0


def parse_nccl_tests(text: str) -> Parsed[list[ParsedTest]]:
    """All test blocks of an nccl-tests / rccl-tests log, with every warning (line-numbered)."""
    # A BOM (a log saved by an editor, or passed as text by a caller that did not decode it
    # with parsers.decode) would glue itself to line 1 and hide the line from every pattern.
    text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    tasks = split_tasks(lines)
    if not tasks:
        return _parse_lines(lines)
    # Independent tests interleaved by srun -l (tasks.py): one set of tests per task.
    tests: list[ParsedTest] = []
    warnings: list[str] = []
    for task, task_lines in tasks:
        parsed = _parse_lines(task_lines)
        said = (f"lines 1-{len(lines)}: srun -l task {task}'s lines read apart from the other "
                f"{len(tasks) - 1} task(s) that printed their own test "
                f"(tasks {', '.join(t for t, _ in tasks)})")
        for test in parsed.value:
            test.label = test.label or f"srun task {task}"
            test.index = len(tests)
            tests.append(test)
        if parsed.value:
            parsed.value[0].warnings.insert(0, said)
        warnings.extend([said, *parsed.warnings])
    return Parsed(value=tests, warnings=warnings)


def _parse_lines(lines: list[str]) -> Parsed[list[ParsedTest]]:
    reader = Reader()
    lines, stripped = strip_prefix(lines)
    if stripped:
        reader.block.warnings.append(stripped)
    for number, line in enumerate(lines, start=1):
        try:
            reader.feed(number, line)
        except Exception as exc:  # the parser must never raise on odd input
            reader.continuing = None
            reader.block.warnings.append(f"line {number}: could not be read ({exc!r}): "
                                         f"{clip(line)!r}")
    tests = reader.finish(len(lines))
    warnings: list[str] = []
    for test in tests:
        try:
            decide(test)
        except Exception as exc:
            test.warnings.append(f"test at line {test.first_line}: analysis failed ({exc!r})")
        test.warnings.sort(key=_line_of)
        warnings.extend(test.warnings)
    return Parsed(value=tests, warnings=warnings)


# The formats parse_any tells apart, by content.
TEXT = "nccl-tests text log"
NCCL_TESTS_JSON = "nccl-tests JSON (-J)"
RCCL_TESTS_CSV = "rccl-tests CSV (-Z csv)"
RCCL_TESTS_JSON = "rccl-tests JSON (-Z json)"


def detect_format(text: str) -> str:
    """Which output of nccl-tests / rccl-tests ``text`` is, from its content."""
    text = text.removeprefix("\ufeff")
    if looks_like_nccl_tests_json(text):
        return NCCL_TESTS_JSON
    if looks_like_rccl_json(text):
        return RCCL_TESTS_JSON
    if looks_like_rccl_csv(text):
        return RCCL_TESTS_CSV
    return TEXT


def parse_any(text: str) -> tuple[str, Parsed[list[ParsedTest]]]:
    """The format of ``text`` and its tests: a text log, nccl-tests' -J JSON or rccl-tests'
    -Z csv/json file. Never raises."""
    kind = detect_format(text)
    if kind == TEXT:
        return kind, parse_nccl_tests(text)
    text = text.removeprefix("\ufeff")
    try:
        if kind == NCCL_TESTS_JSON:
            parsed = parse_nccl_tests_json(text)
        else:
            parsed = parse_rccl_reporter(text, "csv" if kind == RCCL_TESTS_CSV else "json")
    except Exception as exc:  # the parser must never raise on odd input
        return kind, Parsed(value=[], warnings=[f"could not be read ({exc!r})"])
    for test in parsed.value:
        _decide_structured(test)
    return kind, Parsed(value=parsed.value,
                        warnings=[w for test in parsed.value for w in test.warnings])


def _decide_structured(test: ParsedTest) -> None:
    """decide() for a structured file: what the file declares (collective, world size) wins
    over what the table would suggest; a disagreement is a warning."""
    declared = (test.collective, test.collective_source, test.world_size, test.world_size_method)
    if test.program is None and test.collective:
        test.program = f"{test.collective}_perf"
    try:
        decide(test)
    except Exception as exc:
        test.warnings.append(f"test {test.index}: analysis failed ({exc!r})")
    if declared[0]:
        test.collective, test.collective_source = declared[0], declared[1]
    if declared[2]:
        test.world_size, test.world_size_method = declared[2], declared[3]
        if test.table_world_size and test.table_world_size != test.world_size:
            test.warnings.append(f"the table implies {test.table_world_size} ranks but the "
                                 f"file says {test.world_size}")
    _fill_missing_busbw(test)


def _fill_missing_busbw(test: ParsedTest) -> None:
    """A placement read with a valid time but no busbw (``"bus_bw":"nan"``, left NaN by the
    JSON reader) gets algbw x the bus factor of the collective (nccl-tests' definition); where
    the collective or world size is unknown it is dropped, with a warning."""
    known = test.collective in COLLECTIVES and bool(test.world_size)
    for row in test.rows:
        for key in ("out_of_place", "in_place"):
            placement = getattr(row, key)
            if placement is None or math.isfinite(placement.busbw_gbs):
                continue
            if known:
                placement.busbw_gbs = placement.algbw_gbs * bus_factor(
                    str(test.collective), int(test.world_size or 0))
            else:
                setattr(row, key, None)
                test.warnings.append(f"size {row.size_bytes} {key}: busbw missing and the "
                                     "collective or world size unknown; result skipped")
    test.rows = [row for row in test.rows if row.out_of_place or row.in_place]
