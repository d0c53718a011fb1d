"""`collscope compare BASE NEW`: per-size deltas with a verdict, and an exit code that gates CI."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from itertools import groupby
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import add_flags, config_from
from collscope.console import table_console
from collscope.errors import ExitCode, UsageError
from collscope.report.config import CompareConfig
from collscope.units import format_size_exact

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
        render(result, base.name, new.name)
    return ExitCode.FOUND if result.regressed else ExitCode.OK



def _test(row: Any) -> str:
    """The test that decided the row; ci-overlap with the p50 change it judged."""
    if row.test == "ci-overlap" and row.p50_delta_pct is not None:
        return f"ci-overlap (p50 {row.p50_delta_pct:+.1f}%)"
    return row.test


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def decided_by(rows: Sequence[Any]) -> str:
    """Which statistical test decided how many rows, in words."""
    from collscope.report.compare import TESTS

    used = {name: sum(row.test == name for row in rows) for name in TESTS}
    return "decided by: " + "; ".join(f"{name} ({TESTS[name]}) for {count} row(s)"
                                      for name, count in used.items() if count)


# What the verdict column says per Row.category: "ok" only for a change within the threshold.
SHOWN = {"regressed": "regressed", "improved": "improved", "within": "ok",
         "not significant": "not significant", "n/a": "n/a"}
WHY_NOT_SIGNIFICANT = {"ci-overlap": "the 95% CIs of the medians overlap",
                       "mann-whitney": "Mann-Whitney U p > 0.05"}


def summary(result: Any) -> str:
    """The count line: rows per category, and how many distinct sizes they cover."""
    count = {c: len(result.in_category(c)) for c in SHOWN}
    pct = f"{result.threshold_pct:g}%"
    unsure = count["not significant"]
    return (f"matched {len(result.rows)} rows (collective x placement x size; {result.sizes} "
            f"distinct sizes): {count['regressed']} regressed, "
            f"{count['improved']} improved, {count['within']} within +-{pct}"
            + (f", {unsure} changed beyond +-{pct} but not significant" if unsure else "")
            + (f", {count['n/a']} without a usable number" if count["n/a"] else "")
            + f" (judged by {' and '.join(sorted({row.metric for row in result.rows}))})")


def _what(row: Any) -> str:
    b = row.base
    return " ".join(p for p in (b.collective, b.dtype, "" if b.op == "none" else b.op,
                                "" if b.algo == "flat" else b.algo,
                                "in-place" if b.in_place else "out-of-place") if p)


def render(result: Any, base_name: str, new_name: str) -> None:
    """One table per collective x dtype x op x algo, then the verdict lines (plain text, so
    that sizes are never wrapped apart)."""
    from rich.table import Table

    style = {"regressed": "bold red", "improved": "green", "within": "", "n/a": "dim",
             "not significant": "yellow"}

    def group(row: Any) -> tuple[str, str, str, str]:
        return (row.base.collective, row.base.dtype, row.base.op, row.base.algo)

    with table_console(150, 160) as (console, box_style):
        for (collective, dtype, op, algo), rows in groupby(result.rows, key=group):
            title = " ".join(p for p in (collective, dtype, "" if op == "none" else op,
                                         "" if algo == "flat" else algo) if p)
            table = Table(title=f"{title}: {base_name} -> {new_name} (time in us, busbw in "
                                "GB/s)", box=box_style, title_justify="left")
            for name in ("size", "placement", "base time", "new time", "time change",
                         "base busbw", "new busbw", "busbw change", "verdict", "test"):
                table.add_column(name, justify="left" if name in ("placement", "verdict",
                                                                  "test") else "right")
            for row in rows:
                b, n = row.base, row.new
                table.add_row(format_size_exact(b.size_bytes), "in-place" if b.in_place else
                              "out-of-place", f"{b.time_us:g}", f"{n.time_us:g}",
                              _pct(row.time_delta_pct), f"{b.busbw_gbs:g}", f"{n.busbw_gbs:g}",
                              _pct(row.busbw_delta_pct), SHOWN[row.category], _test(row),
                              style=style[row.category])
            console.print(table)
    print(summary(result))
    print(decided_by(result.rows))
    if result.unmatched_base or result.unmatched_new:
        print(f"unmatched: {len(result.unmatched_base)} result(s) only in {base_name}, "
              f"{len(result.unmatched_new)} only in {new_name}")
    pct = f"{result.threshold_pct:g}%"
    for category in ("regressed", "improved", "not significant"):
        rows = result.in_category(category)
        if not rows:
            continue
        why = "; ".join(sorted({WHY_NOT_SIGNIFICANT.get(row.test, row.test) for row in rows}))
        print(f"{category.upper()} beyond {pct}:" if category != "not significant" else
              f"CHANGED beyond {pct} but NOT SIGNIFICANT ({why}; more iterations or runs "
              "can decide):")
        by_what: dict[str, list[str]] = {}
        for row in rows:
            by_what.setdefault(_what(row), []).append(format_size_exact(row.base.size_bytes))
        for what, sizes in by_what.items():
            print(f"  {what}: {', '.join(sizes)}")
