"""Chart specs: what a chart shows (series, axes, scales, cells), read by both renderers
(svg.py inline in the HTML page, plots.py for --png); names, colours and the palette."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from collscope.records.load import Run
from collscope.records.train import TrainRecord

# Colour-blind-friendly, distinct on white; picked by hand for this report.
PALETTE = ("#1f6fb4", "#e4731c", "#2c9c48", "#c9302c", "#7e57c2", "#8c564b", "#d6589f",
           "#5f6b73", "#a8a21a", "#17a2b8", "#003f7f", "#9e3d00")


@dataclass
class Series:
    """One line of a chart. ``key`` ties it to its legend entry (shared by sibling charts)."""

    label: str
    points: list[tuple[float, float]]
    color: str
    dashed: bool = False
    marker: str = "circle"            # "circle" or "square"
    key: str = ""
    tips: list[str] = field(default_factory=list)   # hover text per point


@dataclass
class LineChart:
    id: str                           # file-name-safe: PNG name and SVG id
    title: str
    x_label: str
    y_label: str
    series: list[Series]
    x_log: bool = True
    y_log: bool = True
    x_format: str = "bytes"           # "bytes" | "number"
    y_format: str = "number"
    note: str = ""


@dataclass
class BarChart:
    """Horizontal stacked bars, one per category (train configurations)."""

    id: str
    title: str
    x_label: str
    categories: list[str]
    stacks: list[tuple[str, str, list[float]]]   # (label, colour, one value per category)
    note: str = ""


@dataclass
class HeatMap:
    """A matrix as coloured cells: a links bandwidth matrix, a rank x call lateness map.

    ``values[row][col]`` (None: not measured, drawn blank). ``bad`` says which end of the
    range is the problem ("low" for bandwidth, "high" for waits), so the problem cells are the
    red ones in every heat map of the report. ``limit`` is the threshold of the decision the
    map shows (links: the verdict's slow-below GB/s): cells on its good side are calm blues
    however they spread, only cells past it are red; without one the colours span the range.
    """

    id: str
    title: str
    row_label: str
    col_label: str
    rows: list[str]
    cols: list[str]
    values: list[list[float | None]]
    unit: str
    bad: str = "low"                  # "low" | "high"
    note: str = ""
    limit: float | None = None        # the decision's threshold, in ``unit``


Chart = LineChart | BarChart | HeatMap

# Heat-map colours. Without a limit: light (good end) to red (bad end). With one: at the limit
# HEAT_GOOD, the best values HEAT_BEST (healthy cells stay calm); just past it HEAT_PAST, the
# worst HEAT_BAD.
HEAT_GOOD, HEAT_BAD = (0xf4, 0xf6, 0xf8), (0xc9, 0x30, 0x2c)
HEAT_BEST, HEAT_PAST = (0xc6, 0xdc, 0xee), (0xf3, 0xb0, 0x94)


@dataclass
class Headline:
    """What a section of the report says first: its verdict or headline numbers, in words."""

    text: str                         # one sentence: "links.jsonl: FAIL: slow node(s): node2"
    level: str = "info"               # "fail" | "warn" | "pass" | "info"
    details: list[str] = field(default_factory=list)   # what decided it, one line each


@dataclass
class LegendEntry:
    key: str
    label: str
    color: str
    dashed: bool
    marker: str


@dataclass
class CollectiveView:
    """One collective: busbw and time versus size for every input, and their peak busbw."""

    name: str
    busbw: LineChart
    time: LineChart
    legend: list[LegendEntry]
    peaks: list[dict[str, Any]]


@dataclass
class TrainView:
    run: Run
    rows: list[TrainRecord]           # fastest first
    chart: BarChart


# Names


def slug(text: str) -> str:
    """A file-name-safe id: letters, digits, '-', '_' and '.' only, never a leading dot."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "chart"
    return cleaned[:80]


def placement_name(in_place: bool) -> str:
    return "in-place" if in_place else "out-of-place"


class ColorBook:
    """The same colour for the same thing everywhere on the page."""

    def __init__(self) -> None:
        self._given: dict[str, str] = {}

    def color(self, thing: str) -> str:
        if thing not in self._given:
            self._given[thing] = PALETTE[len(self._given) % len(PALETTE)]
        return self._given[thing]


def as_number(value: Any) -> float | None:
    """A finite real number (not a bool) as a float; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None
