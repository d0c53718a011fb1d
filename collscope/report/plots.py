"""The report's charts as PNG files, drawn with matplotlib from the same specs as the HTML.

matplotlib is optional (``pip install 'collscope[report]'``) and imported only here, only when
PNGs are asked for, with the non-interactive Agg backend (no display needed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collscope.report.charts import (  # as svg.py: two renderers, one chart model
    BarChart,
    Chart,
    HeatMap,
    LineChart,
    axis,
    format_number,
    heat_color,
    heat_key,
    label_step,
    text_color_on,
    tick_label,
)
from collscope.report.svg import MAX_MARKERS

INSTALL_HINT = "matplotlib is needed for PNG output: pip install 'collscope[report]'"


def require_matplotlib() -> Any:
    """pyplot on the Agg backend; ImportError with the install hint where matplotlib is absent."""
    try:
        import matplotlib
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_pngs(charts: list[Chart], directory: str | Path, dpi: int = 110) -> list[Path]:
    """One PNG per chart, named after the chart id (-2, -3 ... where ids repeat); returns the
    paths written."""
    plt = require_matplotlib()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for chart in charts:
        figure = (_line(plt, chart) if isinstance(chart, LineChart)
                  else _heat(plt, chart) if isinstance(chart, HeatMap) else _bars(plt, chart))
        path = out / f"{chart.id}.png"
        number = 1
        while path in written:
            number += 1
            path = out / f"{chart.id}-{number}.png"
        figure.savefig(path, dpi=dpi, bbox_inches="tight")
        plt.close(figure)
        written.append(path)
    return written


def _plain(text: str) -> str:
    # matplotlib reads $...$ as math text; input names may hold a '$'.
    return text.replace("$", r"\$")


def _line(plt: Any, chart: LineChart) -> Any:
    figure, ax = plt.subplots(figsize=(8, 4.8))
    for series in chart.series:
        if not series.points:
            continue
        xs, ys = zip(*series.points)
        ax.plot(xs, ys, color=series.color, linestyle="--" if series.dashed else "-",
                marker=("s" if series.marker == "square" else "o")
                if len(series.points) <= MAX_MARKERS else None, markersize=3.5,
                markerfacecolor="white" if series.marker == "square" else series.color,
                linewidth=1.6, label=_plain(series.label))
    for log, kind, values, set_scale, set_ticks, set_labels, set_lim in (
            (chart.x_log, chart.x_format, [x for s in chart.series for x, _ in s.points],
             ax.set_xscale, ax.set_xticks, ax.set_xticklabels, ax.set_xlim),
            (chart.y_log, chart.y_format, [y for s in chart.series for _, y in s.points],
             ax.set_yscale, ax.set_yticks, ax.set_yticklabels, ax.set_ylim)):
        lo, hi, ticks = axis(values, log, kind)
        if log:
            set_scale("log")
        set_ticks(ticks)
        set_labels([tick_label(t, kind) for t in ticks])
        set_lim(lo, hi)
    ax.minorticks_off()
    ax.grid(True, color="#e9edf0")
    ax.set_title(_plain(chart.title), loc="left", fontsize=11)
    ax.set_xlabel(_plain(chart.x_label))
    ax.set_ylabel(_plain(chart.y_label))
    if any(s.points for s in chart.series):
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2,
                  frameon=False)
    if chart.note:
        figure.text(0.01, 0.005, _plain(chart.note), fontsize=7, color="#5f6b73")
    return figure


def _bars(plt: Any, chart: BarChart) -> Any:
    figure, ax = plt.subplots(figsize=(8, 1.2 + 0.35 * len(chart.categories)))
    positions = list(range(len(chart.categories)))
    left = [0.0] * len(chart.categories)
    for name, color, values in chart.stacks:
        ax.barh(positions, values, left=left, color=color, label=_plain(name), height=0.7)
        left = [a + b for a, b in zip(left, values)]
    ax.set_yticks(positions)
    ax.set_yticklabels([_plain(c if len(c) <= 40 else c[:39] + "…")
                        for c in chart.categories], fontsize=8)
    ax.invert_yaxis()            # fastest (first) on top, as in the HTML
    ax.set_xlabel(_plain(chart.x_label))
    ax.set_title(_plain(chart.title), loc="left", fontsize=11)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2,
              frameon=False)
    return figure


def _heat(plt: Any, chart: HeatMap) -> Any:
    """The same cells and colours as the SVG heat map (colours from charts.heat_color)."""
    from matplotlib.colors import to_rgba

    rows, cols = len(chart.rows), len(chart.cols)
    figure, ax = plt.subplots(figsize=(8, 1.6 + 0.3 * max(rows, 1)))
    blank = (1.0, 1.0, 1.0, 0.0)
    cells = [[to_rgba(heat_color(chart, v)) if v is not None else blank for v in row]
             for row in chart.values]
    ax.imshow(cells if rows else [[blank]], aspect="auto", interpolation="nearest")
    # 7 pt labels on an 8 in wide axis (about 6.2 in): at most about 5 px a character
    shown = range(0, cols, label_step(cols, 6.2 * 72, 5 * max(
        (len(c[:8]) for c in chart.cols), default=1) + 4))
    ax.set_xticks(list(shown))
    ax.set_xticklabels([_plain(chart.cols[j][:8]) for j in shown], fontsize=7)
    ax.set_yticks(range(rows))
    ax.set_yticklabels([_plain(r[:14]) for r in chart.rows], fontsize=7)
    if cols <= 16:
        for i, row in enumerate(chart.values):
            for j, value in enumerate(row):
                if value is not None:
                    ax.text(j, i, format_number(value), ha="center", va="center", fontsize=6,
                            color=text_color_on(heat_color(chart, value)))
    ax.set_xlabel(_plain(f"{chart.col_label}; {heat_key(chart)}"))
    ax.set_ylabel(_plain(chart.row_label))
    ax.set_title(_plain(chart.title), loc="left", fontsize=11)
    return figure
