"""`collscope compare`'s printed output: the summary line, the table of regressed and improved
sizes, and what decided each row (rich; plain text off a terminal)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any

from collscope.console import table_console
from collscope.units import format_size_exact


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
