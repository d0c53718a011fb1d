"""`collscope report`: collscope JSON Lines and nccl-tests logs -> one self-contained HTML file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import (
    add_flags,
    config_from,
)
from collscope.errors import ExitCode, UsageError
from collscope.report.config import ReportConfig

EXAMPLES = """\
examples:
  collscope report bench.jsonl -o report.html
  collscope report before.jsonl after.jsonl rccl-tests.log -o compare.html --png plots/
  collscope report train.jsonl monitor.jsonl -o train.html
  collscope report watch.jsonl -o watch.html --json verdicts.jsonl   # the verdicts, for scripts

Inputs are collscope JSON Lines (bench `run`/`result`, `train`, monitor `sample`, `overlap`,
trace, links, tune and prediction records) or nccl-tests / rccl-tests text logs, told apart by
their content. The page shows, per collective, busbw and time versus message size (log axes)
with every input overlaid (solid: out-of-place, dashed: in-place), the run contexts side by
side (secret-named values hidden), train sweep tables and charts, overlap tables and monitor
timelines. It opens offline: inline SVG, no CDN, nothing fetched. stderr says what each input
holds.
exit codes: 0 ok, 2 bad input (unreadable file, a log with no result table, nothing to report).
"""


def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "report",
        help="self-contained HTML report (plots, run contexts) of results and logs",
        description="Plot and tabulate collscope results and nccl-tests logs in one HTML file.",
        epilog=EXAMPLES)
    add_flags(p, ReportConfig)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.records.load import InputError, load_inputs
    from collscope.report.html import all_charts, render_report

    config = config_from(ReportConfig, args)
    if config.png:
        from collscope.report.plots import require_matplotlib

        try:
            require_matplotlib()       # before anything is written
        except ImportError as error:
            raise UsageError(f"--png: {error}") from None
    try:
        inputs = load_inputs(config.inputs)
    except InputError as error:
        raise UsageError(f"INPUT: {error}") from None
    if not any(source.results or any(run.train or run.samples or run.predictions or run.tune
                                     or run.trace or run.links or run.overlap or run.hang
                                     or run.watch for run in source.runs)
               for source in inputs):
        raise UsageError("INPUT: no result, train, sample, trace, prediction, tune, link, "
                         "overlap, hang or watch records in any input; nothing to plot")
    page = render_report(inputs, title=config.title)
    try:
        with open(config.output, "w", encoding="utf-8") as out:
            out.write(page)
    except OSError as error:
        raise UsageError(f"-o/--output: cannot write {config.output} "
                         f"({error.strerror or error})") from None
    for source in inputs:
        sys.stderr.write(f"collscope report: {source.name}: {source.kind}, {source.holdings()}, "
                         f"{len(source.warnings)} warning(s)\n")
    if config.json:
        _write_json_lines(config.json, inputs)
    said = sys.stderr if config.json == "-" else sys.stdout    # stdout then carries JSON only
    said.write(f"wrote {config.output}\n")
    if config.png:
        from collscope.report.plots import write_pngs

        try:
            written = write_pngs(all_charts(inputs), config.png)
        except OSError as error:
            raise UsageError(f"--png: cannot write into {config.png} "
                             f"({error.strerror or error})") from None
        said.write(f"wrote {len(written)} PNG chart(s) to {config.png}\n")
    return ExitCode.OK


def _write_json_lines(path: str, inputs: list[Any]) -> None:
    from collscope.records.jsonl import write_records
    from collscope.records.report import ReportHeadlineRecord, ReportInputRecord
    from collscope.report.html import report_sections

    records = [ReportHeadlineRecord(section.id, h.level, h.text, list(h.details)).to_dict()
               for section in report_sections(inputs) if section is not None
               for h in section.headlines]
    records += [ReportInputRecord(source.name, source.path, source.kind, source.counts(),
                                  list(source.warnings)).to_dict() for source in inputs]
    write_records(path, records)
