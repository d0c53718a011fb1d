"""Axis math and number formats shared by both renderers: log and 1-2-5 ticks, tick labels,
heat-map colours (pure)."""

from __future__ import annotations

import math
import re

from collscope.report.charts.spec import HEAT_BAD, HEAT_BEST, HEAT_GOOD, HEAT_PAST, HeatMap

RGB = tuple[int, int, int]


def heat_range(chart: HeatMap) -> tuple[float, float]:
    """(lowest, highest) measured value of a heat map; (0, 0) when nothing was measured."""
    measured = [v for row in chart.values for v in row if v is not None]
    return (min(measured), max(measured)) if measured else (0.0, 0.0)


def _mix(a: RGB, b: RGB, share: float) -> str:
    share = min(max(share, 0.0), 1.0)
    return "#" + "".join(f"{round(x + (y - x) * share):02x}" for x, y in zip(a, b))


def past_limit(chart: HeatMap, value: float) -> bool:
    """Whether a cell is on the bad side of the map's decision threshold."""
    if chart.limit is None:
        return False
    return value < chart.limit if chart.bad == "low" else value > chart.limit


def heat_color(chart: HeatMap, value: float) -> str:
    """The colour of one cell. With a limit: calm blue on its good side (bluer the better),
    red past it (darker the further, the worst cell darkest); without one: light at the good
    end of the range, red at the bad end."""
    lo, hi = heat_range(chart)
    worst, best = (lo, hi) if chart.bad == "low" else (hi, lo)
    if chart.limit is None:
        return _mix(HEAT_GOOD, HEAT_BAD, 0.0 if hi <= lo else (best - value) / (best - worst))
    limit = chart.limit
    if past_limit(chart, value):
        return _mix(HEAT_PAST, HEAT_BAD, 1.0 if worst == limit else
                    (value - limit) / (worst - limit))
    return _mix(HEAT_GOOD, HEAT_BEST, 0.0 if best == limit else (value - limit) / (best - limit))


def _luminance(color: str) -> float:
    """WCAG 2 relative luminance of a #rrggbb colour."""
    channels = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(one: str, other: str) -> float:
    """WCAG 2 contrast ratio of two #rrggbb colours (1 to 21)."""
    high, low = sorted((_luminance(one), _luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def text_color_on(fill: str) -> str:
    """Black or white, whichever contrasts more with ``fill``: at least 4.58:1 on any colour,
    above WCAG's 4.5:1 for normal text."""
    return max(("#000000", "#ffffff"), key=lambda text: contrast_ratio(text, fill))


def label_step(count: int, room_px: float, label_px: float) -> int:
    """Every how many labels to print so that ``count`` labels of up to ``label_px`` wide,
    spread over ``room_px``, do not touch: 1, 2, 5, 10, 20, 50, ... (round call numbers)."""
    if count <= 1 or room_px <= 0:
        return 1
    needed = math.ceil(label_px / (room_px / count))
    step = 1
    while step < needed:
        step = next(s * 10 ** math.floor(math.log10(step)) for s in (2, 5, 10)
                    if s * 10 ** math.floor(math.log10(step)) > step)
    return step


def heat_key(chart: HeatMap) -> str:
    """What the colours of a heat map mean, in words (under the SVG and the PNG alike)."""
    if chart.limit is not None:
        side = "below" if chart.bad == "low" else "above"
        return (f"red: {side} the threshold {format_number(chart.limit)} {chart.unit}, "
                "blue: on its good side")
    lo, hi = heat_range(chart)
    return (f"colour: {format_number(lo)} to {format_number(hi)} {chart.unit}, red = "
            f"{'lowest' if chart.bad == 'low' else 'highest'}")


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
