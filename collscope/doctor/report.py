"""Rendering findings: plain text (pipes, logs), rich tables (terminals), JSON (--json)."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Sequence
from typing import IO

from collscope.doctor.checks import AREAS, LEVELS, Finding

LABELS = {"fail": "FAIL", "warn": "WARN", "info": "info", "ok": " ok "}
STYLES = {"fail": "bold red", "warn": "yellow", "info": "cyan", "ok": "green"}
AREA_TITLES = {"gpu": "GPUs", "torch": "torch build", "topology": "Topology", "host": "Host",
               "network": "Network", "ucx": "UCX", "nccl": "RCCL/NCCL log",
               "env": "Environment", "selftest": "Self-test", "cluster": "Cluster",
               "tools": "Tools"}
WIDTH = 100


def summary_line(findings: Sequence[Finding]) -> str:
    counts = Counter(f.level for f in findings)
    return ", ".join(f"{counts.get(level, 0)} {level}" for level in LEVELS)


def _grouped(findings: Sequence[Finding]) -> list[tuple[str, list[Finding]]]:
    """Areas in the order the findings come (worst area first), findings kept in order."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.area, []).append(finding)
    return list(groups.items())


def render_text(findings: Sequence[Finding], header: str, footer: str = "") -> str:
    """The plain report: a header, then per area its findings (worst first) with fixes."""
    lines = [header, f"checks: {summary_line(findings)}", ""]
    indent = " " * 9
    for area, items in _grouped(findings):
        lines.append(AREA_TITLES.get(area, area))
        for f in items:
            lines += textwrap.wrap(f"[{LABELS.get(f.level, f.level)}] {f.title}  ({f.id})",
                                   WIDTH, initial_indent="  ", subsequent_indent=indent,
                                   break_on_hyphens=False)
            if f.detail:
                lines += textwrap.wrap(f.detail, WIDTH, initial_indent=indent,
                                       subsequent_indent=indent, break_on_hyphens=False)
            if f.fix:
                lines += textwrap.wrap(f"fix: {f.fix}", WIDTH, initial_indent=indent,
                                       subsequent_indent=indent + "     ",
                                       break_on_hyphens=False, break_long_words=False)
        lines.append("")
    if footer:
        lines.append(footer)
    return "\n".join(lines).rstrip() + "\n"


def render_rich(findings: Sequence[Finding], header: str, stream: IO[str],
                footer: str = "") -> None:
    """The same report as rich tables, one per area (terminals only)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=stream, highlight=False)
    console.print(Text(header, style="bold"))
    console.print(f"checks: {summary_line(findings)}")
    for area, items in _grouped(findings):
        table = Table(title=AREA_TITLES.get(area, area), title_justify="left", expand=True,
                      show_header=False, box=None, padding=(0, 1))
        table.add_column("level", width=4, no_wrap=True)
        table.add_column("finding", ratio=1)
        table.add_column("id", no_wrap=True, style="dim")
        for f in items:
            body = Text()
            body.append(f.title, style="bold" if f.level in ("fail", "warn") else "")
            if f.detail:
                body.append("\n" + f.detail, style="dim")
            if f.fix:
                body.append("\nfix: " + f.fix, style="italic")
            table.add_row(Text(LABELS.get(f.level, f.level), style=STYLES.get(f.level, "")),
                          body, f.id)
        console.print()
        console.print(table)
    if footer:
        console.print()
        console.print(footer)


def render(findings: Sequence[Finding], header: str, stream: IO[str], footer: str = "") -> None:
    """Rich tables on a terminal, plain text otherwise."""
    if stream.isatty():
        render_rich(findings, header, stream, footer)
    else:
        stream.write(render_text(findings, header, footer))
    stream.flush()


assert set(AREA_TITLES) == set(AREAS)
