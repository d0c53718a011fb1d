"""Import nccl-tests / rccl-tests outputs as collscope records: text logs, nccl-tests' -J JSON
and rccl-tests' -Z csv/json files, told apart by content (``parsers.nccl_tests.parse_any``).

Each test block of a log (one ``*_perf`` run) becomes one ``RunRecord`` (command "import",
launcher "import") followed by one ``BenchResult`` per printed row and placement: two per row
where the log prints both out-of-place and in-place, one where it prints only one. Times and
bandwidths are the printed numbers, unchanged. nccl-tests prints only the mean time per op, so
the percentile fields are None (the per-iteration columns of recent nccl-tests, when present,
fill ``time_us_min`` / ``time_us_max``).

How each context field is found is written into ``RunRecord.extra`` (``world_size_method``,
``nodes_method``, ``collective_source`` ...), together with the source name and the line numbers
of the block, of its table and of every result (``result_lines``, in result order).

A log without any result row raises ``LogImportError`` naming the failure it reports, e.g.
``x.txt: no result table; the log reports a failure at line 22: cnode2-002: Test NCCL failure
common.cu:1279 'remote process exited or there was a network error / '``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from collscope import __version__
from collscope.collectives.table import COLLECTIVES, bus_factor
from collscope.parsers.decode import DecodeError, decode_capture
from collscope.parsers.nccl_tests import (
    TEXT,
    ParsedTest,
    Placement,
    Row,
    failed,
    parse_any,
    printed_unit,
)
from collscope.records.base import Record
from collscope.records.bench import BenchResult
from collscope.records.run import RunRecord, recorded_env
from collscope.redact import redact_argv, redact_secrets

TIMING = "as printed by nccl-tests (mean per op over the timed loop)"
# nccl-tests -a/--average: how the time of each rank is combined.
_AVERAGE = {"0": "rank0", "1": "mean", "2": "min", "3": "max"}
_STRONG_FAILURE = re.compile(r"Test (?:\w+ )?failure|#\s*error:|NCCL error|failure", re.I)


class ImportLogRecord(Record, tag="import_log"):
    """`collscope import --json`: one per log given, what was taken from it (or why not)."""

    log: str                          # as given
    runs: int
    results: int
    collectives: list[str] = []
    world_sizes: list[int] = []
    failed_results: int = 0           # rows the log marks failed (kept, with the mark)
    warnings: list[str] = []
    error: str = ""                   # --skip-failed: why the log gave nothing


class LogImportError(ValueError):
    """The log holds no result table; the message names the failure it reports, if any."""


@dataclass
class ImportedRun:
    """One test of a log as collscope records, with what the import could not take as is."""

    run: RunRecord
    results: list[BenchResult]
    warnings: list[str] = field(default_factory=list)
    test: ParsedTest | None = field(default=None, repr=False)

    def records(self) -> list[dict[str, Any]]:
        """The JSON Lines records: the run first, then its results."""
        return [self.run.to_dict(), *(result.to_dict() for result in self.results)]


def to_records(runs: list[ImportedRun]) -> list[dict[str, Any]]:
    """JSON Lines records of several imported runs, each run followed by its results."""
    return [record for run in runs for record in run.records()]


def import_file(path: str | Path) -> list[ImportedRun]:
    """``import_log`` of a file, decoded as captured (``parsers.decode``: compressed, UTF-16,
    a BOM, Latin-1 lines, ANSI colours)."""
    try:
        text = decode_capture(Path(path).read_bytes())
    except DecodeError as error:
        raise LogImportError(f"{path}: {error}") from None
    return import_log(text, str(path))


def import_log(text: str, source: str) -> list[ImportedRun]:
    """Every test of an nccl-tests / rccl-tests log that printed results, as collscope records.

    ``source`` names the log in records and messages. Raises ``LogImportError`` when no test
    printed a result row.
    """
    source_format, parsed = parse_any(text)
    tests = parsed.value
    with_rows = [test for test in tests if test.rows]
    if not with_rows:
        raise LogImportError(redact_secrets(_no_table_message(source, tests, source_format,
                                                              parsed.warnings)))
    runs: list[ImportedRun] = []
    by_index: dict[int, ImportedRun] = {}
    for test in with_rows:
        imported = _import_test(test, source, len(tests), source_format)
        runs.append(imported)
        by_index[test.index] = imported
    for test in tests:
        if test.rows:
            continue
        # A test of the log that printed no rows: say so on the nearest imported run.
        target = next((by_index[t.index] for t in reversed(with_rows) if t.index < test.index),
                      by_index[with_rows[0].index])
        what = test.program or "test"
        failure = _best_failure(test.failures)
        reason = (f"; the log reports a failure at line {failure[0]}: {failure[1]}" if failure
                  else "")
        target.warnings.append(f"lines {test.first_line}-{test.last_line}: {what} printed no "
                               f"result rows{reason}")
        target.warnings.extend(test.warnings)
    for run in runs:       # in place: the run record's extra holds the same list
        run.warnings[:] = [redact_secrets(warning) for warning in run.warnings]
    return runs


def _hidden(value: Any) -> Any:
    """``redact_secrets`` of a text taken from the log; other values as they are."""
    return redact_secrets(value) if isinstance(value, str) else value


def _best_failure(failures: list[tuple[int, str]]) -> tuple[int, str] | None:
    for line, text in failures:
        if _STRONG_FAILURE.search(text):
            return line, text
    return failures[0] if failures else None


def _no_table_message(source: str, tests: list[ParsedTest], source_format: str = TEXT,
                      warnings: list[str] | None = None) -> str:
    if source_format != TEXT:      # a structured file: say which, and why nothing was kept
        why = "; ".join((warnings or [])[:3]) or "it holds no result entries"
        return f"{source}: {source_format} file without a usable result row ({why})"
    failures = sorted(failure for test in tests for failure in test.failures)
    failure = _best_failure(failures)
    if failure:
        more = f" ({len(failures)} failure lines in all)" if len(failures) > 1 else ""
        return (f"{source}: no result table; the log reports a failure at line {failure[0]}: "
                f"{failure[1]}{more}")
    headers = [test.header.line for test in tests if test.header]
    if headers:
        return (f"{source}: the result table at line {headers[0]} has no rows (the run was cut "
                "off, or the rows were left out)")
    return f"{source}: no result table (no line looks like an nccl-tests result row)"


# ---------------------------------------------------------------------------------------------
# One test -> run + results
# ---------------------------------------------------------------------------------------------


def _import_test(test: ParsedTest, source: str, tests_in_log: int,
                 source_format: str) -> ImportedRun:
    warnings = list(test.warnings)
    command = test.command
    world_size = test.world_size or 0
    if not world_size:
        warnings.append(f"line {test.first_line}: world size unknown (no device block, launcher "
                        "rank count or table evidence); world_size is 0 and busbw cannot be "
                        "checked")
    nodes, ranks_per_node, nodes_method = _layout(test, world_size)
    collective = test.collective or _program_stem(test.program) or "unknown"
    args = command.test_args if command else {}
    iters, iters_source = _iters(test, args)
    average = _AVERAGE.get(args.get("-a", args.get("--average", "1")), "mean")
    results: list[BenchResult] = []
    result_lines: list[int] = []
    failed_results: list[int] = []
    for row in test.rows:
        for in_place, placement in row.placements():
            if failed(placement, row.dtype, test.world_size):
                failed_results.append(len(results))
            results.append(_result(test, row, in_place, placement, collective, world_size,
                                   iters, average, args))
            result_lines.append(row.line)
    warnings.extend(_busbw_mismatches(test, collective, world_size))
    for line, text in test.failures:
        warnings.append(f"line {line}: the log reports a failure: {text}")
    devices = _devices(test)
    extra: dict[str, Any] = {
        "source": source,
        "source_format": source_format,
        "test_index": test.index,
        "tests_in_log": tests_in_log,
        "lines": [test.first_line, test.last_line],
        "table_line": test.header.line if test.header else test.rows[0].line,
        "result_lines": result_lines,
        "label": _hidden(test.label),
        "program": test.program,
        "collective_source": test.collective_source,
        "world_size_method": test.world_size_method,
        "nodes_method": nodes_method,
        "devices_elided": test.devices_elided,
        # A captured command line may set a token: secret-named values never leave the log.
        "command_line": redact_secrets(command.text) if command else None,
        "command_line_at": command.line if command else None,
        "other_command_lines": [{"line": c.line, "text": redact_secrets(c.text)}
                                for c in test.commands if c is not command],
        "params": asdict(test.params) if test.params else None,
        "reduced_max_bytes": test.reduced_max_bytes,
        "footer": asdict(test.footer),
        "failed_results": failed_results,
        "failures": [{"line": line, "text": redact_secrets(text)} for line, text in test.failures],
        "notes": [{"line": line, "text": redact_secrets(text)} for line, text in test.notes],
        "info": {key: _hidden(value) for key, value in test.info.items()},
        "iters_source": iters_source,
        "average_source": ("-a on the command line" if "-a" in args or "--average" in args
                           else "nccl-tests default (mean over ranks)"),
        "time_percentiles": _percentiles_source(results),
        "started_at": ("unknown (0.0): the file gives local time "
                       f"{test.info['start_time']!r} without a zone" if "start_time" in test.info
                       else "unknown (0.0): the log carries no date"),
        "warnings": warnings,
    }
    run = RunRecord(
        command="import",
        collscope_version=__version__,
        argv=redact_argv(command.argv) if command else [],
        launcher="import",
        backend=_backend(test),
        world_size=world_size,
        nodes=nodes,
        ranks_per_node=ranks_per_node,
        hosts=test.hosts,
        devices=devices,
        versions=dict(test.versions),
        env=recorded_env(dict(command.env)) if command else {},
        timing=TIMING,
        started_at=0.0,
        extra=extra,
    )
    return ImportedRun(run=run, results=results, warnings=warnings, test=test)


def _result(test: ParsedTest, row: Row, in_place: bool, placement: Placement, collective: str,
            world_size: int, iters: int, average: str, args: dict[str, str]) -> BenchResult:
    return BenchResult(
        collective=collective,
        size_bytes=row.size_bytes,
        count=row.count,
        dtype=row.dtype,
        op=row.redop,
        root=_root(row, collective, args),
        in_place=in_place,
        world_size=world_size,
        iters=iters,
        time_us=placement.time_us,
        time_us_p50=_more_float(placement, "i_p50"),
        time_us_p95=_more_float(placement, "i_p95"),
        time_us_min=_more_float(placement, "i_min"),
        time_us_max=_more_float(placement, "i_max"),
        algbw_gbs=placement.algbw_gbs,
        busbw_gbs=placement.busbw_gbs,
        wrong=placement.wrong,
        average=average,
        max_error=placement.error,
    )


def _percentiles_source(results: list[BenchResult]) -> str:
    if any(r.time_us_p50 is not None for r in results):
        return ("nccl-tests' per-iteration statistics (-I 1): p50/p95/min/max over the timed "
                "iterations, each iteration's time the max over processes")
    return ("unknown: nccl-tests prints only the mean time per op; time_us_p50/p95 are null, "
            "time_us_min/max are null unless the log has per-iteration columns")


def _more_float(placement: Placement, name: str) -> float | None:
    text = placement.more.get(name)
    if text is None or not re.fullmatch(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _root(row: Row, collective: str, args: dict[str, str]) -> int:
    if row.root is not None:
        return row.root
    # Old format: no root column. Rooted collectives ran with -r (nccl-tests default 0).
    if collective in COLLECTIVES and COLLECTIVES[collective].rooted:
        text = args.get("-r", args.get("--root", "0"))
        return int(text) if re.fullmatch(r"-?\d+", text) else 0
    return -1


def _iters(test: ParsedTest, args: dict[str, str]) -> tuple[int, str]:
    if test.params and test.params.iters is not None:
        return test.params.iters, f"parameter line {test.params.line}"
    text = args.get("-n", args.get("--iters"))
    if text and text.isdigit():
        return int(text), "-n on the command line"
    return 0, "unknown (0)"


def _program_stem(program: str | None) -> str | None:
    if not program:
        return None
    return program.split("_perf")[0] or None


def _backend(test: ParsedTest) -> str:
    """rccl for rccl-tests / RCCL / ROCm evidence, else nccl."""
    versions = test.versions
    if any(key in versions for key in ("rccl_tests", "rccl", "hip", "rocm")):
        return "rccl"
    names = " ".join(device.name or "" for device in test.devices)
    if re.search(r"\bAMD\b|Instinct|Radeon", names):
        return "rccl"
    texts = [command.text for command in test.commands] + list(test.info.values())
    if any("rccl" in text.lower() for text in texts):
        return "rccl"
    # Lines only rccl-tests prints.
    if any(re.match(r"Errors with asterisks|Testing \d+ cycle", note) for _, note in test.notes):
        return "rccl"
    return "nccl"


def _devices(test: ParsedTest) -> list[dict[str, Any]]:
    hosts = test.hosts
    per_host: Counter[str] = Counter()
    devices = []
    for device in test.devices:
        devices.append({
            "rank": device.rank, "host": device.host, "node": hosts.index(device.host),
            "local_rank": per_host[device.host], "device": device.device, "name": device.name,
            "pci": device.pci, "pid": device.pid, "group": device.group, "line": device.line,
        })
        per_host[device.host] += 1
    return devices


def _layout(test: ParsedTest, world_size: int) -> tuple[int, int, str]:
    """(nodes, ranks per node, how they were found); 0 where unknown."""
    if test.nodes and test.ranks_per_node:
        return test.nodes, test.ranks_per_node, "nodes and ranksPerNode columns of the file"
    if test.devices and not test.devices_elided:
        counts = Counter(device.host for device in test.devices)
        sizes = set(counts.values())
        per_node = sizes.pop() if len(sizes) == 1 else 0
        how = "distinct hosts of the device block"
        if not per_node:
            how += " (ranks per node uneven: 0)"
        return len(counts), per_node, how
    if test.devices and world_size:
        per_node = max(device.device for device in test.devices) + 1
        if per_node and world_size % per_node == 0:
            return (world_size // per_node, per_node,
                    "guess: highest device index + 1 ranks per host (device block elided)")
    label = re.search(r"(\d+)[- ]?nodes?\b", test.label or "", re.I)
    if label and int(label.group(1)) > 0:
        nodes = int(label.group(1))
        per_node = world_size // nodes if world_size and world_size % nodes == 0 else 0
        return nodes, per_node, f"separator label {test.label!r}"
    return 0, 0, "unknown (0)"


def _busbw_mismatches(test: ParsedTest, collective: str, world_size: int) -> list[str]:
    """Rows whose printed busbw is not algbw x bus factor at the printed precision."""
    if collective not in COLLECTIVES or not world_size:
        return []
    factor = bus_factor(collective, world_size)
    found = []
    for row in test.rows:
        for in_place, p in row.placements():
            slack = (printed_unit(p.algbw_text) * factor + printed_unit(p.busbw_text)) / 2
            if abs(p.algbw_gbs * factor - p.busbw_gbs) > slack + 1e-9:
                where = "in-place" if in_place else "out-of-place"
                found.append(f"line {row.line}: {where} busbw {p.busbw_text} is not algbw "
                             f"{p.algbw_text} x {factor:.4g} ({collective}, {world_size} ranks)")
    return found
