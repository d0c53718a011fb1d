"""Axis math and number formats shared by both renderers: log and 1-2-5 ticks, tick labels,
heat-map colours (pure)."""

from __future__ import annotations

import math
import re

from collscope.report.charts.spec import HEAT_BAD, HEAT_GOOD, HeatMap


def heat_range(chart: HeatMap) -> tuple[float, float]:
    """(lowest, highest) measured value of a heat map; (0, 0) when nothing was measured."""
    measured = [v for row in chart.values for v in row if v is not None]
    return (min(measured), max(measured)) if measured else (0.0, 0.0)


def heat_color(chart: HeatMap, value: float) -> str:
    """The colour of one cell: light at the good end of the range, red at the bad end."""
    lo, hi = heat_range(chart)
    share = 0.0 if hi <= lo else (value - lo) / (hi - lo)
    badness = 1.0 - share if chart.bad == "low" else share
    rgb = (round(g + (b - g) * badness) for g, b in zip(HEAT_GOOD, HEAT_BAD))
    return "#" + "".join(f"{c:02x}" for c in rgb)


def format_number(value: float) -> str:
    """Compact tick and tooltip numbers: 0.05, 12.5, 300, 45k, 1.2M, 3G."""
    magnitude = abs(value)
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= factor:
            return f"{value / factor:.3g}{suffix}"
    return re.sub(r"e([-+])0*(\d)", r"e\1\2", f"{value:.3g}").replace("e+", "e")


def format_bytes_tick(value: float) -> str:
    """Powers of two as nccl-tests users say them: 8, 512, 1K, 64K, 1M, 4G."""
    for factor, suffix in ((1024**4, "T"), (1024**3, "G"), (1024**2, "M"), (1024, "K")):
        if value >= factor:
            return f"{value / factor:g}{suffix}"
    return f"{value:g}"


def tick_label(value: float, kind: str) -> str:
    return format_bytes_tick(value) if kind == "bytes" else format_number(value)


def log_ticks(lo: float, hi: float, base: int) -> tuple[float, float, list[float]]:
    """(axis min, axis max, ticks) for positive data on a log axis, at powers of ``base``.

    Base 2 (sizes) thins the ticks to at most about 9; base 10 adds 2x and 5x ticks when the
    data spans two decades or less, so that a narrow range still gets labels.
    """
    e_lo = math.floor(math.log(lo, base) + 1e-9)
    e_hi = math.ceil(math.log(hi, base) - 1e-9)
    if e_hi <= e_lo:
        e_lo, e_hi = e_lo - 1, e_hi + 1
    span = e_hi - e_lo
    if base == 2:
        step = next(s for s in (1, 2, 3, 4, 5, 10, 20, 40) if span / s <= 9)
        first = math.ceil(e_lo / step) * step
        ticks = [float(2 ** e) for e in range(first, e_hi + 1, step)]
    else:
        step = 1 if span <= 9 else 2
        ticks = [10.0 ** e for e in range(e_lo, e_hi + 1, step)]
        if span <= 2:
            ticks = sorted(t * m for t in ticks for m in (1, 2, 5) if t * m <= base ** e_hi)
    return float(base) ** e_lo, float(base) ** e_hi, ticks


def linear_ticks(lo: float, hi: float, count: int = 6) -> tuple[float, float, list[float]]:
    """(axis min, axis max, ticks) at a 1-2-5 step; the axis starts at 0 for non-negative data."""
    if lo > 0:
        lo = 0.0
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    last = math.ceil(hi / step) * step
    ticks = [first + i * step for i in range(int(round((last - first) / step)) + 1)]
    return first, last, ticks


def axis(values: list[float], log: bool, kind: str) -> tuple[float, float, list[float]]:
    """Axis range and ticks for values (log axes: positive values only)."""
    if log:
        positive = [v for v in values if v > 0]
        if not positive:
            return 1.0, 10.0, [1.0, 10.0]
        return log_ticks(min(positive), max(positive), 2 if kind == "bytes" else 10)
    if not values:
        return 0.0, 1.0, [0.0, 1.0]
    return linear_ticks(min(values), max(values))
