"""What `collscope tune` prints: per size the defaults and every configuration's speed-up with
its interval and verdict, the failed configurations, and the decision. Pure formatting, printed
by :func:`render` on collscope.console's table console."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from collscope.tune.analysis import TIME_METHOD, Row, significance, winner_ranges
from collscope.tune.config import TuneConfig
from collscope.tune.handover import NO_WINNER, recommend
from collscope.tune.space import Config, Space
from collscope.units import format_size


def _cell(row: Row) -> str:
    interval = row.interval
    if interval is None:
        return f"{row.busbw_gbs:.3g} GB/s"
    ci = (f" [{interval.low:.3f}, {interval.high:.3f}]" if interval.low is not None
          and interval.high is not None else "")
    star = " *" if row.winner else ""
    return f"{interval.ratio:.3f}x{ci} {row.verdict}{star}"


def header_lines(rows: Sequence[Row], space: Space, config: TuneConfig, how: str,
                 ci_method: str) -> list[str]:
    baseline = space.baseline
    out = [f"# collscope tune: {how}",
           f"# baseline (\"defaults\"): {'; '.join(space.baseline_notes)}",
           f"# time: {TIME_METHOD}; busbw from it (nccl-tests' definition)",
           f"# [CI] of the speed-up: {ci_method}",
           f"# intervals: {significance(rows, config.confidence)}",
           f"# faster = interval above {1 + config.min_gain:g}; * = winner at that size"]
    for config_, name in _names(rows, baseline).items():
        out.append(f"#   {name}: {config_.label(baseline)}")
    return out


def _names(rows: Sequence[Row], baseline: Config) -> dict[Config, str]:
    configs = dict.fromkeys(r.config for r in rows if r.config != baseline)
    return {c: f"c{i + 1}" for i, c in enumerate(configs)}


def tables(rows: Sequence[Row], baseline: Config,
           ) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, column names, cells) per collective: the defaults' busbw, every configuration's
    speed-up with its interval and verdict, per size."""
    names = _names(rows, baseline)
    by_point: dict[tuple[str, str, int], dict[Config, Row]] = defaultdict(dict)
    for row in rows:
        by_point[row.point][row.config] = row
    out = []
    for collective in dict.fromkeys(p[0] for p in by_point):
        body = []
        for point, cells in sorted(by_point.items()):
            if point[0] != collective:
                continue
            base = cells.get(baseline)
            body.append([format_size(point[2]), _cell(base) if base else "n/a",
                         *(_cell(cells[c]) if c in cells else "n/a" for c in names)])
        out.append((f"{collective} ({rows[0].dtype}, {rows[0].world_size} ranks):",
                    ["size", "defaults busbw", *names.values()], body))
    return out


def summary_lines(rows: Sequence[Row], failed: dict[Config, str], space: Space,
                  config: TuneConfig, stopped: str) -> list[str]:
    """The winners by size range, the failed configurations, and the decision."""
    baseline = space.baseline
    out = []
    ranges = winner_ranges(rows)
    if ranges:
        out += ["", "winners by size range:"]
    for size_range in ranges:
        first, last = format_size(size_range.sizes[0]), format_size(size_range.sizes[-1])
        sizes = first if first == last else f"{first}-{last}"
        interval = size_range.winner.interval
        gain = f" ({interval.ratio:.3f}x at {format_size(size_range.sizes[-1])})" if interval \
            else ""
        out.append(f"  {size_range.collective} {sizes}: {size_range.config.label(baseline)}"
                   f"{gain}")
    if failed:
        out.append("")
        out.append("failed (never recommended):")
        out += [f"  {c.label(baseline)}: {reason}" for c, reason in failed.items()]
    if stopped:
        out.append(f"stopped early: {stopped}")
    out.append("")
    rec = recommend(rows, baseline)
    if not any(row.config == baseline for row in rows):
        out.append("verdict: none: the defaults were not measured, so nothing could be compared")
    elif rec.config is None:
        out.append(f"verdict: {NO_WINNER} (no interval lies wholly above "
                   f"{1 + config.min_gain:g})")
    elif rec.everywhere:
        out.append(f"verdict: {rec.config.label(baseline)} wins at every size where a "
                   "configuration beats the defaults")
    else:
        out.append(f"verdict: no single set wins everywhere; best single set "
                   f"{rec.config.label(baseline)} (geometric-mean speed-up), it loses at:")
        out += [f"  {loss}" for loss in rec.losses]
    return out


def render(rows: Sequence[Row], failed: dict[Config, str], space: Space, config: TuneConfig,
           how: str, stopped: str, ci_method: str) -> None:
    """On the table console every command shares (rich on a terminal, Markdown off it); no
    markup: the cells' intervals are written in brackets."""
    from rich.table import Table

    from collscope.console import table_console

    with table_console(120, 160, markup=False) as (console, style):
        for line in header_lines(rows, space, config, how, ci_method):
            console.print(line, soft_wrap=True)
        for title, columns, body in tables(rows, space.baseline):
            table = Table(title=title, box=style, title_justify="left")
            for index, name in enumerate(columns):
                table.add_column(name, justify="right" if index else "left")
            for cells in body:
                table.add_row(*cells)
            console.print()
            console.print(table)
        for line in summary_lines(rows, failed, space, config, stopped):
            console.print(line, soft_wrap=True)
