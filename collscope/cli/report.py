"""`collscope report`: collscope JSON Lines and nccl-tests logs -> one self-contained HTML file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.errors import UsageError

EXAMPLES = """\
examples:
  collscope report bench.jsonl -o report.html
  collscope report before.jsonl after.jsonl rccl-tests.log -o compare.html --png plots/
  collscope report train.jsonl monitor.jsonl -o train.html

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
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="collscope JSON Lines files or nccl-tests / rccl-tests logs")
    p.add_argument("-o", "--output", required=True, metavar="report.html",
                   help="HTML file to write")
    p.add_argument("--png", metavar="DIR",
                   help="also write every chart as a PNG into DIR (needs matplotlib: "
                        "pip install 'collscope[report]')")
    p.add_argument("--title", default="collscope report", help="page title")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.records.load import InputError, load_inputs
    from collscope.report.html import all_charts, render_report

    if args.png:
        from collscope.report.plots import require_matplotlib

        try:
            require_matplotlib()       # before anything is written
        except ImportError as error:
            raise UsageError(f"--png: {error}") from None
    try:
        inputs = load_inputs(args.inputs)
    except InputError as error:
        raise UsageError(f"INPUT: {error}") from None
    if not any(source.results or any(run.train or run.samples or run.predictions or run.tune
                                     or run.trace or run.links or run.overlap or run.hang
                                     or run.watch for run in source.runs)
               for source in inputs):
        raise UsageError("INPUT: no result, train, sample, trace, prediction, tune, link, "
                         "overlap, hang or watch records in any input; nothing to plot")
    page = render_report(inputs, title=args.title)
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(page)
    except OSError as error:
        raise UsageError(f"-o/--output: cannot write {args.output} "
                         f"({error.strerror or error})") from None
    for source in inputs:
        sys.stderr.write(f"collscope report: {source.name}: {source.kind}, {source.holdings()}, "
                         f"{len(source.warnings)} warning(s)\n")
    print(f"wrote {args.output}")
    if args.png:
        from collscope.report.plots import write_pngs

        try:
            written = write_pngs(all_charts(inputs), args.png)
        except OSError as error:
            raise UsageError(f"--png: cannot write into {args.png} "
                             f"({error.strerror or error})") from None
        print(f"wrote {len(written)} PNG chart(s) to {args.png}")
    return 0
