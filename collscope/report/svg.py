"""Chart specs as inline SVG: the report draws with no library, no script and no network.

Every string that may come from an input (series names, tooltips, category names) goes through
``esc``; attributes carry only numbers, colours from our palette and ids we generate. Styling
uses SVG presentation attributes and classes only (no ``style=`` attributes), so the page's
Content-Security-Policy can forbid inline styles other than its own style sheet.
"""

from __future__ import annotations

import html
import math

from collscope.report.charts import (
    BarChart,
    HeatMap,
    LineChart,
    Series,
    axis,
    format_number,
    heat_color,
    heat_key,
    label_step,
    text_color_on,
    tick_label,
)

WIDTH, HEIGHT = 600, 360
LEFT, RIGHT, TOP, BOTTOM = 66, 18, 34, 48
MAX_MARKERS = 150


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


class _Scale:
    """Data value -> pixel along one axis (log or linear)."""

    def __init__(self, lo: float, hi: float, log: bool, start: float, end: float):
        self.log = log
        self.lo, self.hi = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        v = math.log10(value) if self.log else value
        span = (self.hi - self.lo) or 1.0
        return self.start + (v - self.lo) / span * (self.end - self.start)


def _marker(series: Series, x: float, y: float, tip: str) -> str:
    title = f"<title>{esc(tip)}</title>" if tip else ""
    if series.marker == "square":
        return (f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" fill="#fff" '
                f'stroke="{series.color}" stroke-width="1.5">{title}</rect>')
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{series.color}">{title}</circle>'


def line_chart(chart: LineChart) -> str:
    """One line chart as an <svg> element (log or linear axes, grid, ticks, markers)."""
    xs = [x for s in chart.series for x, _ in s.points]
    ys = [y for s in chart.series for _, y in s.points]
    x_lo, x_hi, x_ticks = axis(xs, chart.x_log, chart.x_format)
    y_lo, y_hi, y_ticks = axis(ys, chart.y_log, chart.y_format)
    sx = _Scale(x_lo, x_hi, chart.x_log, LEFT, WIDTH - RIGHT)
    sy = _Scale(y_lo, y_hi, chart.y_log, HEIGHT - BOTTOM, TOP)
    out = _svg_open(chart.id, chart.title, HEIGHT, LEFT)
    for tick in x_ticks:
        x = sx(tick)
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" '
                   f'y2="{HEIGHT - BOTTOM}"/>')
        out.append(f'<text class="tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 18}" '
                   f'text-anchor="middle">{esc(tick_label(tick, chart.x_format))}</text>')
    for tick in y_ticks:            # the x axis's grid line and label, turned for the y axis
        y = sy(tick)
        out.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" '
                   f'y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{esc(tick_label(tick, chart.y_format))}</text>')
    out.append(f'<rect class="frame" x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" '
               f'height="{HEIGHT - TOP - BOTTOM}"/>')
    out.append(f'<text class="label" x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 10}" '
               f'text-anchor="middle">{esc(chart.x_label)}</text>')
    out.append(f'<text class="label" transform="translate(16 {(TOP + HEIGHT - BOTTOM) / 2:.0f}) '
               f'rotate(-90)" text-anchor="middle">{esc(chart.y_label)}</text>')
    for series in chart.series:
        if not series.points:
            continue
        pixels = [(sx(x), sy(y)) for x, y in series.points]
        out.append(f'<g class="series" data-s="{esc(series.key)}">')
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pixels)
        dash = ' stroke-dasharray="6 4"' if series.dashed else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{series.color}" '
                   f'stroke-width="1.8"{dash}/>')
        if len(pixels) <= MAX_MARKERS:     # long timelines: the line alone stays readable
            tips = series.tips or [""] * len(pixels)
            out.extend(_marker(series, x, y, tip) for (x, y), tip in zip(pixels, tips))
        out.append("</g>")
    if not xs:
        out.append(f'<text class="label" x="{WIDTH / 2:.0f}" y="{HEIGHT / 2:.0f}" '
                   'text-anchor="middle">no data to draw</text>')
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(chart: BarChart) -> str:
    """Horizontal stacked bars, each under its category name (config names are long)."""
    name_h, bar, gap, left = 14, 16, 10, 10
    row = name_h + bar + gap
    bottom = TOP + len(chart.categories) * row
    height = bottom + 64
    totals = [sum(stack[2][i] for stack in chart.stacks) for i in range(len(chart.categories))]
    lo, hi, ticks = axis([0.0, *totals], False, "number")
    sx = _Scale(lo, hi, False, left, WIDTH - RIGHT - 36)   # room for the totals
    out = _svg_open(chart.id, chart.title, height, left)
    for tick in ticks:
        x = sx(tick)
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{bottom}"/>')
        out.append(f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">'
                   f'{esc(format_number(tick))}</text>')
    for i, category in enumerate(chart.categories):
        y = TOP + i * row
        short = category if len(category) <= 90 else category[:89] + "…"
        out.append(f'<text class="tick" x="{left}" y="{y + name_h - 3}"><title>{esc(category)}'
                   f"</title>{esc(short)}</text>")
        start = lo
        for name, color, values in chart.stacks:
            value = values[i]
            if value <= 0:
                continue
            x0, x1 = sx(start), sx(start + value)
            out.append(f'<rect x="{x0:.1f}" y="{y + name_h}" width="{max(x1 - x0, 0.5):.1f}" '
                       f'height="{bar}" fill="{color}"><title>{esc(category)}\n{esc(name)}: '
                       f'{esc(format_number(value))}</title></rect>')
            start += value
        out.append(f'<text class="tick" x="{sx(start) + 4:.1f}" y="{y + name_h + bar - 4}">'
                   f'{esc(format_number(totals[i]))}</text>')
    out.append(f'<text class="label" x="{(left + WIDTH - RIGHT - 36) / 2:.0f}" '
               f'y="{bottom + 34}" text-anchor="middle">{esc(chart.x_label)}</text>')
    legend_x = left
    for name, color, _ in chart.stacks:
        out.append(f'<rect x="{legend_x}" y="{height - 18}" width="10" height="10" '
                   f'fill="{color}"/>')
        out.append(f'<text class="tick" x="{legend_x + 14}" y="{height - 9}">{esc(name)}</text>')
        legend_x += 14 + 7 * len(name) + 20
    out.append("</svg>")
    return "\n".join(out)


# Text widths for spacing labels: 11 px tick text is at most about 6.6 px a character.
TICK_CHAR_PX = 6.6


def heat_map(chart: HeatMap) -> str:
    """A matrix of cells under its column labels, each cell with its value as a tooltip (and
    printed in the cell, black or white for contrast, while the cells are wide enough to
    read); column and row labels thinned so that none overlaps."""
    label_w, right = 96, RIGHT
    cols, rows = max(len(chart.cols), 1), len(chart.rows)
    cell_w = (WIDTH - label_w - right) / cols
    cell_h = max(min(cell_w, 24.0), 4.0)
    top = TOP + 20
    bottom = top + rows * cell_h
    height = bottom + 44
    out = _svg_open(chart.id, chart.title, height, 10)
    out.append(f'<text class="label" x="{label_w + (WIDTH - label_w - right) / 2:.0f}" '
               f'y="{TOP + 10}" text-anchor="middle">{esc(chart.col_label)}</text>')
    show_text = cell_w >= 34 and cell_h >= 14
    col_names = [col[:8] for col in chart.cols]
    widest = max((len(name) for name in col_names), default=1) * TICK_CHAR_PX + 6
    col_every = label_step(cols, WIDTH - label_w - right, widest)
    for j, col in enumerate(col_names):
        if j % col_every == 0:
            x = label_w + (j + 0.5) * cell_w
            out.append(f'<text class="tick" x="{x:.1f}" y="{bottom + 14}" '
                       f'text-anchor="middle">{esc(col)}</text>')
    row_every = label_step(rows, rows * cell_h, 13)        # 11 px text, 2 px apart
    for i, (name, values) in enumerate(zip(chart.rows, chart.values)):
        y = top + i * cell_h
        if i % row_every == 0:
            out.append(f'<text class="tick" x="{label_w - 6}" y="{y + cell_h / 2 + 4:.1f}" '
                       f'text-anchor="end"><title>{esc(name)}</title>{esc(name[:14])}</text>')
        for j, value in enumerate(values):
            if value is None:
                continue
            x = label_w + j * cell_w
            fill = heat_color(chart, value)
            tip = f"{chart.row_label} {name}, {chart.col_label} {chart.cols[j]}: " \
                  f"{format_number(value)} {chart.unit}"
            out.append(f'<rect class="cell" x="{x:.1f}" y="{y:.1f}" width="{cell_w:.1f}" '
                       f'height="{cell_h:.1f}" fill="{fill}" stroke="#fff" '
                       f'stroke-width="0.5"><title>{esc(tip)}</title></rect>')
            if show_text:
                out.append(f'<text class="value" x="{x + cell_w / 2:.1f}" '
                           f'y="{y + cell_h / 2 + 4:.1f}" text-anchor="middle" '
                           f'fill="{text_color_on(fill)}">{esc(format_number(value))}</text>')
    out.append(f'<text class="label" x="{label_w}" y="{height - 12}">{esc(chart.row_label)} '
               f"(rows); {esc(heat_key(chart))}</text>")
    if not rows:
        out.append(f'<text class="label" x="{WIDTH / 2:.0f}" y="{top + 20}" '
                   'text-anchor="middle">no data to draw</text>')
    out.append("</svg>")
    return "\n".join(out)


def render(chart: LineChart | BarChart | HeatMap) -> str:
    """Any chart spec as SVG."""
    if isinstance(chart, LineChart):
        return line_chart(chart)
    if isinstance(chart, HeatMap):
        return heat_map(chart)
    return bar_chart(chart)


def legend_swatch(color: str, dashed: bool, marker: str) -> str:
    """A small line-and-marker sample for an HTML legend entry."""
    dash = ' stroke-dasharray="5 3"' if dashed else ""
    mark = (f'<rect x="11" y="4" width="6" height="6" fill="#fff" stroke="{color}" '
            'stroke-width="1.5"/>' if marker == "square"
            else f'<circle cx="14" cy="7" r="3" fill="{color}"/>')
    return (f'<svg class="swatch" width="28" height="14" viewBox="0 0 28 14" aria-hidden="true">'
            f'<line x1="0" y1="7" x2="28" y2="7" stroke="{color}" stroke-width="2"{dash}/>'
            f"{mark}</svg>")


def _svg_open(chart_id: str, title: str, height: int | float, title_x: int | float) -> list[str]:
    """The opening <svg> tag and the chart's title, shared by every chart kind."""
    return [f'<svg class="chart" id="svg-{esc(chart_id)}" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
            f'aria-label="{esc(title)}">',
            f'<text class="title" x="{title_x}" y="20">{esc(title)}</text>']
