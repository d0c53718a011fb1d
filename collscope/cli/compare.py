"""`collscope compare BASE NEW`: per-size deltas with a verdict, and an exit code that gates CI."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import add_flags, config_from
from collscope.errors import ExitCode, UsageError
from collscope.report.config import CompareConfig

EXAMPLES = """\
examples:
  collscope compare baseline.jsonl today.jsonl
  collscope compare last_week_rccl-tests.log today.jsonl --threshold 10
  collscope compare base.jsonl new.jsonl --min-bytes 1M --json delta.jsonl
  collscope bench all_reduce -b 1M -e 1G --json new.jsonl && \\
      collscope compare baseline.jsonl new.jsonl || echo "collectives got slower"

BASE and NEW are collscope JSON Lines or nccl-tests / rccl-tests logs. Results are matched by
collective, dtype, op, placement, size and algorithm. A row regresses when NEW is slower than
BASE by more than the threshold: time up by more than PCT% (--metric time), or busbw down by
more than PCT% (--metric busbw); auto (default) uses time when both ran on the same number of
ranks and busbw otherwise. Where both sides recorded their spread (collscope bench JSON Lines:
p50 and the 95% CI of the median), a row regresses only when its p50 is beyond the threshold
AND the two CIs do not overlap (test ci-overlap), so noisy small sizes do not fail CI; logs
without a spread are judged on the threshold alone (test threshold). Three or more runs of the
same key and world size on both sides form one row, judged on their medians with a one-sided
Mann-Whitney U test (test mann-whitney, p <= 0.05). When one side ran a size more often (a log
with a second run appended), each extra run is compared with the other side's last run, so a
regression in any run of NEW fails the gate; results of NEW left unjudged are warned about.
The output names the test; a change beyond the threshold that its test cannot tell from noise
is "not significant", not "ok".
Lines of BASE or NEW that cannot be used are listed on stderr, one line each.
exit codes: 0 no regression, 1 some matched size regressed beyond the threshold, 2 nothing
matched or bad input.
"""


def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "compare", help="per-size deltas between two result sets; exit 1 on a regression",
        description="Compare two sets of collective results size by size (a CI regression "
                    "gate).", epilog=EXAMPLES)
    add_flags(p, CompareConfig)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.records.jsonl import write_records
    from collscope.records.load import InputError, load_inputs, tune_results
    from collscope.redact import redact_argv
    from collscope.report.compare import compare

    config = config_from(CompareConfig, args)
    min_bytes = config.min_bytes
    try:
        base, new = load_inputs([config.base, config.new])
    except InputError as error:
        raise UsageError(f"BASE/NEW: {error}") from None
    for source in (base, new):       # malformed lines are said, never dropped silently
        for warning in source.warnings:
            sys.stderr.write(f"collscope compare: {warning}\n")
    sides = []
    for name, source in (("BASE", base), ("NEW", new)):
        # A tune sweep compares per configuration (its medians, the configuration as algo).
        results = source.results or [r for run in source.runs for r in tune_results(run)]
        if not results:
            raise UsageError(f"{name}: {source.path} holds no bench results to compare")
        sides.append(results)
    result = compare(sides[0], sides[1], config.threshold_pct, config.metric, min_bytes)
    if not result.rows:
        raise UsageError(f"nothing matches: no result of {new.name} has the collective, dtype, "
                         f"op, placement, size and algo of one in {base.name}"
                         + (f" (sizes >= {min_bytes} B)" if min_bytes else ""))
    if result.unmatched_new:
        # Not a regression, but not judged either: a CI gate must not pass them silently.
        sys.stderr.write(f"collscope compare: warning: {len(result.unmatched_new)} result(s) "
                         f"of {new.name} not judged: BASE has no result of their collective, "
                         "dtype, op, placement, size, algo and world size\n")
    if config.json:
        write_records(config.json, result.records(config.base, config.new,
                                                redact_argv(["collscope", *argv])))
    if config.json != "-":
        from collscope.report.compare_text import render

        render(result, base.name, new.name)
    return ExitCode.FOUND if result.regressed else ExitCode.OK
