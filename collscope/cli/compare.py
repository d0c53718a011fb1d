"""`collscope compare BASE NEW`: per-size deltas with a verdict, and an exit code that gates CI."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from itertools import groupby
from typing import Any

from collscope.config_flags import add_flags, config_from
from collscope.console import table_console, write_json
from collscope.errors import UsageError
from collscope.report.compare import CompareConfig
from collscope.units import format_size_exact

EXAMPLES = """\
examples:
  collscope compare baseline.jsonl today.jsonl
  collscope compare last_week_rccl-tests.log today.jsonl --threshold 10
  collscope compare base.jsonl new.jsonl --min-bytes 1M --json delta.json
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
Mann-Whitney U test (test mann-whitney, p <= 0.05). The output names the test.
exit codes: 0 no regression, 1 some matched size regressed beyond the threshold, 2 nothing
matched or bad input.
"""


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "compare", help="per-size deltas between two result sets; exit 1 on a regression",
        description="Compare two sets of collective results size by size (a CI regression "
                    "gate).", epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", metavar="BASE", help="baseline: collscope JSON Lines or a log")
    p.add_argument("new", metavar="NEW", help="candidate: collscope JSON Lines or a log")
    add_flags(p, CompareConfig)
    p.add_argument("--json", metavar="FILE",
                   help="write the comparison as JSON ('-': to stdout instead of the table)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.report.compare import compare
    from collscope.report.store import InputError, load_inputs, tune_results

    config = config_from(CompareConfig, args)
    min_bytes = config.min_bytes
    try:
        base, new = load_inputs([args.base, args.new])
    except InputError as error:
        raise UsageError(f"BASE/NEW: {error}") from None
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
    if args.json:
        write_json(args.json, {"base": base.path, "new": new.path, **result.to_dict()})
    if args.json != "-":
        render(result, base.name, new.name)
    return 1 if result.regressed else 0



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
    return "decided by: " + "; ".join(f"{name} ({TESTS[name]}) for {count} size(s)"
                                      for name, count in used.items() if count)


def render(result: Any, base_name: str, new_name: str) -> None:
    """One table per collective x dtype x op x algo, then the verdict lines (plain text, so
    that sizes are never wrapped apart)."""
    from rich.table import Table

    style = {"regressed": "bold red", "improved": "green", "ok": "", "n/a": "dim"}

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
                              _pct(row.busbw_delta_pct), row.verdict, _test(row),
                              style=style[row.verdict])
            console.print(table)
    counts = {v: len(result.with_verdict(v)) for v in ("regressed", "improved", "ok", "n/a")}
    metrics = sorted({row.metric for row in result.rows})
    print(f"matched {len(result.rows)} sizes: {counts['regressed']} regressed, "
          f"{counts['improved']} improved, {counts['ok']} within +-{result.threshold_pct:g}%"
          + (f", {counts['n/a']} without a usable number" if counts["n/a"] else "")
          + f" (judged by {' and '.join(metrics)})")
    print(decided_by(result.rows))
    if result.unmatched_base or result.unmatched_new:
        print(f"unmatched: {len(result.unmatched_base)} result(s) only in {base_name}, "
              f"{len(result.unmatched_new)} only in {new_name}")
    for verdict in ("regressed", "improved"):
        rows = result.with_verdict(verdict)
        if not rows:
            continue
        print(f"{verdict.upper()} beyond {result.threshold_pct:g}%:")
        by_what: dict[str, list[str]] = {}
        for row in rows:
            collective, dtype, op, algo = group(row)
            what = " ".join(p for p in (collective, dtype, "" if op == "none" else op,
                                        "" if algo == "flat" else algo,
                                        "in-place" if row.base.in_place else "out-of-place")
                            if p)
            by_what.setdefault(what, []).append(format_size_exact(row.base.size_bytes))
        for what, sizes in by_what.items():
            print(f"  {what}: {', '.join(sizes)}")
