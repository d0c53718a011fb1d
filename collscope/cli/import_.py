"""`collscope import`: nccl-tests / rccl-tests text logs -> collscope JSON Lines records.

The module is named ``import_`` because ``import`` is a Python keyword; the subcommand is
``import``. Every log is read before anything is written, so a log without a result table stops
the command (exit 2, one line naming the failure the log reports) without leaving a partial
output file, unless ``--skip-failed`` asks to import the others anyway.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from collscope.cli._common import command_parser
from collscope.config_flags import (
    add_flags,
    config_from,
)
from collscope.errors import ExitCode, UsageError
from collscope.report.config import ImportConfig

if TYPE_CHECKING:      # the library is imported when the command runs (a fast --help)
    from collscope.records.logs import ImportLogRecord

EXAMPLES = """\
examples:
  collscope import all_reduce_perf.log -o ar.jsonl
  collscope import logs/*.txt -o cluster.jsonl --skip-failed
  collscope import run.log -o - | jq 'select(.kind=="result") | .busbw_gbs'
  collscope import a.log b.log -o all.jsonl --json summary.jsonl
  collscope import ar.json rccl.csv -o all.jsonl    # nccl-tests -J, rccl-tests -Z csv

Each test of a log becomes a `run` record (hosts and devices from the '# Using devices' block,
versions, env from the command line) followed by one `result` per printed row and placement,
with time, algbw and busbw exactly as printed (the schema of `collscope bench --json`).
Lines the importer cannot use are listed with their line numbers on stderr. A log given twice,
or a copy of one (same decoded content), is read once, with a warning.
exit codes: 0 ok, 2 bad input (a log with no result table, an unreadable file).
"""


def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "import", help="nccl-tests / rccl-tests logs -> collscope JSON Lines",
        description="Import nccl-tests / rccl-tests output as collscope run + result records: "
                    "text logs of any version (launcher/collector line prefixes stripped), "
                    "nccl-tests -J JSON, rccl-tests -Z csv|json; recognised by content.",
        epilog=EXAMPLES)
    add_flags(p, ImportConfig)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.records.jsonl import write_records
    from collscope.records.load import distinct_inputs
    from collscope.records.logs import ImportLogRecord, LogImportError, import_file, to_records

    config = config_from(ImportConfig, args)
    # The same log twice (or two copies of it) would write every run twice: read it once.
    logs, repeats = distinct_inputs(config.logs)
    for repeat in repeats:
        _say(f"warning: {repeat}")
    # Read every log first: a failure exits with its one line and nothing written or printed.
    outcomes: list[tuple[str, list[Any] | None, str]] = []
    for log in logs:
        try:
            outcomes.append((log, import_file(log), ""))
        except OSError as error:
            raise UsageError(f"LOG: cannot read {log} ({error.strerror or error})") from None
        except LogImportError as error:
            if not config.skip_failed:
                raise UsageError(str(error)) from None
            outcomes.append((log, None, str(error)))
    imported = []
    summary: list[ImportLogRecord] = []
    for log, runs, failure in outcomes:
        if runs is None:
            _say(f"skipped {failure}")
            summary.append(ImportLogRecord(log, 0, 0, error=failure))
            continue
        imported.extend(runs)
        warnings = [w for run in runs for w in run.warnings]
        summary.append(_log_summary(log, runs, warnings))
        _say(_summary_line(summary[-1]))
        if not config.quiet:
            for warning in warnings:
                _say(f"  {log}: {warning}")
    if not imported:
        raise UsageError("LOG: no log had a result table; nothing to write")
    records = to_records(imported)
    write_records(config.output, records, "-o/--output")
    if config.output != "-":
        _say(f"wrote {len(records)} records ({len(imported)} run(s)) to {config.output}")
    if config.json:
        write_records(config.json, [entry.to_dict() for entry in summary])
    return ExitCode.OK


def _say(line: str) -> None:
    sys.stderr.write(f"collscope import: {line}\n")


def _log_summary(log: str, runs: list[Any], warnings: list[str]) -> ImportLogRecord:
    from collscope.records.logs import ImportLogRecord

    return ImportLogRecord(
        log, len(runs), sum(len(run.results) for run in runs),
        collectives=sorted({r.collective for run in runs for r in run.results}),
        world_sizes=sorted({run.run.world_size for run in runs}),
        failed_results=sum(len(run.run.extra.get("failed_results", [])) for run in runs),
        warnings=warnings)


def _summary_line(info: ImportLogRecord) -> str:
    ranks = "/".join(str(n) for n in info.world_sizes if n) or "unknown"
    failed = f", {info.failed_results} failed" if info.failed_results else ""
    return (f"{info.log}: {info.runs} run(s), {info.results} results{failed} "
            f"({', '.join(info.collectives)}; {ranks} ranks), {len(info.warnings)} warning(s)")
