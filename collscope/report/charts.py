"""What the report draws, independent of how: chart specs built from inputs, and axis math.

The HTML report renders these specs as inline SVG (``svg.py``) and ``--png`` renders the very
same specs with matplotlib (``plots.py``), so both always show the same data. Everything here is
pure: inputs in, specs out.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from collscope.report.store import Input, Run
from collscope.results import BenchResult
from collscope.units import format_size

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
    dark ones in every heat map of the report.
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


Chart = LineChart | BarChart | HeatMap

HEAT_GOOD, HEAT_BAD = (0xf4, 0xf6, 0xf8), (0xc9, 0x30, 0x2c)


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
    rows: list[dict[str, Any]]        # train records, fastest first
    chart: BarChart


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Collectives
# ---------------------------------------------------------------------------------------------


def collective_views(inputs: list[Input], colors: ColorBook | None = None,
                     ) -> list[CollectiveView]:
    """Per collective (first-seen order), busbw and time versus size for every run overlaid.

    One series per run x dtype x op x algorithm x placement: colour by run (and variant), solid
    circles out-of-place, dashed squares in-place.
    """
    colors = colors or ColorBook()
    grouped: dict[str, dict[tuple[str, str, str, str, bool], list[BenchResult]]] = {}
    world: dict[str, int] = {}
    for source in inputs:
        for run in source.runs:
            for r in run.results:
                series_key = (run.label, str(r.dtype), str(r.op), str(r.algo), bool(r.in_place))
                grouped.setdefault(str(r.collective), {}).setdefault(series_key, []).append(r)
                world[run.label] = world.get(run.label) or int(r.world_size or 0)
    views = []
    for index, (collective, by_series) in enumerate(grouped.items()):
        variants = {key[1:4] for key in by_series}
        show_variant = len(variants) > 1
        busbw_series, time_series, legend, peaks = [], [], [], []
        zero_busbw = 0
        for number, ((label, dtype, op, algo, in_place), results) in enumerate(
                sorted(by_series.items(), key=lambda item: _series_order(item[0], by_series))):
            results = sorted(results, key=lambda r: r.size_bytes)
            variant = " ".join(v for v in (dtype, op if op != "none" else "",
                                           algo if algo != "flat" else "") if v)
            ranks = f"{world[label]} ranks" if world.get(label) else "ranks unknown"
            name = " · ".join(part for part in (label, variant if show_variant else "", ranks,
                                                placement_name(in_place)) if part)
            # One colour per run on the whole page, per run and variant where variants differ.
            color = colors.color(f"{label}\0{variant}" if show_variant else label)
            key = f"c{index}s{number}"
            marker = "square" if in_place else "circle"
            tips = [f"{name}\n{format_size(r.size_bytes)} ({r.size_bytes} B): "
                    f"busbw {r.busbw_gbs:.4g} GB/s, algbw {r.algbw_gbs:.4g} GB/s, "
                    f"time {r.time_us:.4g} us" for r in results]
            drawn = [(i, r) for i, r in enumerate(results) if r.busbw_gbs > 0 and r.size_bytes > 0]
            zero_busbw += len(results) - len(drawn)
            busbw_series.append(Series(name, [(r.size_bytes, r.busbw_gbs) for _, r in drawn],
                                       color, in_place, marker, key, [tips[i] for i, _ in drawn]))
            timed = [(i, r) for i, r in enumerate(results) if r.time_us > 0 and r.size_bytes > 0]
            time_series.append(Series(name, [(r.size_bytes, r.time_us) for _, r in timed],
                                      color, in_place, marker, key, [tips[i] for i, _ in timed]))
            legend.append(LegendEntry(key, name, color, in_place, marker))
            best = max(results, key=lambda r: r.busbw_gbs)
            peaks.append({"series": name, "color": color, "sizes": len(results),
                          "smallest": results[0].size_bytes, "largest": results[-1].size_bytes,
                          "peak_busbw_gbs": best.busbw_gbs, "peak_at": best.size_bytes,
                          "wrong": sum(r.wrong or 0 for r in results)})
        note = (f"{zero_busbw} point(s) with busbw 0 are not drawn (log axis)"
                if zero_busbw else "")
        cid = slug(collective)
        views.append(CollectiveView(
            collective,
            LineChart(f"{cid}_busbw", f"{collective}: bus bandwidth", "message size",
                      "busbw (GB/s)", busbw_series, note=note),
            LineChart(f"{cid}_time", f"{collective}: time per operation", "message size",
                      "time (us)", time_series),
            legend, peaks))
    return views


def _series_order(key: tuple[str, str, str, str, bool],
                  by_series: dict[tuple[str, str, str, str, bool], list[BenchResult]]) -> tuple:
    # Input order of runs first (dicts keep insertion order), then out-of-place before in-place.
    order = list(dict.fromkeys(k[0] for k in by_series))
    return (order.index(key[0]), key[1], key[2], key[3], key[4])


# ---------------------------------------------------------------------------------------------
# Model predictions
# ---------------------------------------------------------------------------------------------


def prediction_charts(inputs: list[Input], colors: ColorBook | None = None) -> list[LineChart]:
    """Per collective with `collscope model predict` records: busbw versus size, one colour per
    layout (nodes x ranks per node), predicted dashed with open squares, measured (result rows
    of runs on that layout) solid with filled circles."""
    colors = colors or ColorBook()
    predicted: dict[str, dict[tuple[int, int], list[tuple[float, float]]]] = defaultdict(dict)
    for source in inputs:
        for run in source.runs:
            for p in run.predictions:
                layout = (int(p["nodes"]), int(p.get("ranks_per_node") or 0))
                predicted[str(p["collective"])].setdefault(layout, []).append(
                    (p["size_bytes"], p["busbw_gbs"]))
    charts = []
    for collective, by_layout in predicted.items():
        measured: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
        for source in inputs:
            for run in source.runs:
                nodes, per_node = run.context.get("nodes"), run.context.get("ranks_per_node")
                if isinstance(nodes, int) and isinstance(per_node, int) \
                        and (nodes, per_node) in by_layout:
                    measured[(nodes, per_node)] += [
                        (r.size_bytes, r.busbw_gbs) for r in run.results
                        if r.collective == collective and r.busbw_gbs > 0]
        series = []
        for index, layout in enumerate(sorted(by_layout)):
            color = colors.color(f"layout {layout}")
            name = f"{layout[0]} node(s) x {layout[1]}"
            for kind, points, dashed in (("predicted", by_layout[layout], True),
                                         ("measured", _median_per_size(measured.get(layout, [])),
                                          False)):
                if not points:
                    continue
                points = sorted(points)
                tips = [f"{name} {kind}\n{format_size(int(x))}: busbw {y:.4g} GB/s"
                        for x, y in points]
                series.append(Series(f"{name} {kind}", points, color, dashed,
                                     "square" if dashed else "circle", f"p{index}{kind[0]}",
                                     tips))
        charts.append(LineChart(
            f"{slug(collective)}_model", f"{collective}: measured vs predicted busbw",
            "message size", "busbw (GB/s)", series,
            note="predicted: `collscope model predict` (dashed); measured: median per size of "
                 "the result rows (placements, runs) on the same nodes x ranks per node "
                 "(solid)"))
    return charts


def _median_per_size(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    by_size: dict[float, list[float]] = defaultdict(list)
    for x, y in points:
        by_size[x].append(y)
    return [(x, statistics.median(ys)) for x, ys in sorted(by_size.items())]


# ---------------------------------------------------------------------------------------------
# Train
# ---------------------------------------------------------------------------------------------

TRAIN_COLUMNS = ("step_time_ms", "step_time_ms_nosync", "exposed_comm_ms", "pure_comm_ms",
                 "overlap_fraction", "tokens_per_s", "comm_bytes_per_step", "peak_memory_bytes",
                 "loss_first", "loss_last")


def config_text(config: Any) -> str:
    if isinstance(config, dict):
        return ", ".join(f"{k}={v}" for k, v in config.items()) or "(defaults)"
    return "(defaults)" if config is None else str(config)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def train_views(inputs: list[Input]) -> list[TrainView]:
    """Per run with train records: the records fastest first, and step time split in a chart."""
    views = []
    for source in inputs:
        for run in source.runs:
            if not run.train:
                continue
            rows = sorted(run.train, key=lambda rec: (_number(rec.get("step_time_ms")) is None,
                                                      _number(rec.get("step_time_ms")) or 0.0))
            categories = [config_text(rec.get("config")) for rec in rows]
            step = [_number(rec.get("step_time_ms")) or 0.0 for rec in rows]
            exposed = [min(max(_number(rec.get("exposed_comm_ms")) or 0.0, 0.0), s)
                       for rec, s in zip(rows, step)]
            chart = BarChart(
                f"train_{slug(run.label)}", f"{run.label}: step time per configuration",
                "milliseconds per step", categories,
                [("step without exposed comm", PALETTE[0], [s - e for s, e in zip(step, exposed)]),
                 ("exposed communication", PALETTE[3], exposed)],
                note="fastest first; exposed comm = step time - step time without gradient sync")
            views.append(TrainView(run, rows, chart))
    return views


# ---------------------------------------------------------------------------------------------
# Tune
# ---------------------------------------------------------------------------------------------


def tune_charts(inputs: list[Input]) -> list[LineChart]:
    """Per tune run and collective: busbw versus size, one series per configuration (the
    defaults dashed); hover text gives the speed-up, its interval and the verdict."""
    charts: list[LineChart] = []
    for source in inputs:
        for run in source.runs:
            by_collective: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
            for rec in run.tune:
                size, busbw = _number(rec.get("size_bytes")), _number(rec.get("busbw_gbs"))
                if size and busbw and isinstance(rec.get("collective"), str):
                    by_collective[rec["collective"]].setdefault(
                        str(rec.get("label", "?")), []).append(rec)
            for collective, by_label in by_collective.items():
                series = []
                for number, (label, recs) in enumerate(by_label.items()):
                    recs = sorted(recs, key=lambda r: r["size_bytes"])
                    baseline = any(r.get("baseline") for r in recs)
                    tips = [f"{label}\n{format_size(int(r['size_bytes']))}: busbw "
                            f"{r['busbw_gbs']:.4g} GB/s, {_ratio_text(r)}" for r in recs]
                    series.append(Series(label, [(r["size_bytes"], r["busbw_gbs"]) for r in recs],
                                         PALETTE[number % len(PALETTE)], baseline,
                                         "square" if baseline else "circle",
                                         f"t{len(charts)}s{number}", tips))
                charts.append(LineChart(
                    f"tune_{slug(run.label)}_{slug(collective)}",
                    f"{run.label}: {collective} busbw per configuration", "message size",
                    "busbw (GB/s)", series,
                    note="dashed: the defaults; time = median over trials; hover for the "
                         "speed-up over the defaults with its interval"))
    return charts


def _ratio_text(record: dict[str, Any]) -> str:
    if record.get("baseline"):
        return "the defaults"
    low, high = _number(record.get("ratio_ci_low")), _number(record.get("ratio_ci_high"))
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"{_number(record.get('ratio')) or 0:.3f}x the defaults{ci}, {record.get('verdict')}"


# ---------------------------------------------------------------------------------------------
# Monitor
# ---------------------------------------------------------------------------------------------


def metric_family(name: str) -> tuple[str, str]:
    """(family, instance): gpu.3.util_percent -> (gpu.*.util_percent, 3); cpu.percent -> itself."""
    parts = name.split(".")
    if len(parts) >= 3:
        return f"{parts[0]}.*.{parts[-1]}", ".".join(parts[1:-1])
    return name, ""


def monitor_charts(inputs: list[Input], max_series: int = 24,
                   max_points: int = 1000) -> list[LineChart]:
    """One timeline per metric family; a series per run x host x instance, time from run start.

    Long recordings are thinned to ``max_points`` per series (``decimate`` keeps the peaks).
    """
    families: dict[str, dict[tuple[str, str, str], list[tuple[float, float]]]] = defaultdict(dict)
    for source in inputs:
        for run in source.runs:
            if not run.samples:
                continue
            start = min(float(s["ts"]) for s in run.samples)
            for sample in run.samples:
                host = str(sample.get("host", ""))
                t = float(sample["ts"]) - start
                for metric, value in sample["metrics"].items():
                    number = _number(value)
                    if number is None:
                        continue        # absent or not a number: a gap, never a 0
                    family, instance = metric_family(str(metric))
                    points = families[family].setdefault((run.label, host, instance), [])
                    points.append((t, number))
    charts = []
    for family, by_series in sorted(families.items()):
        series: list[Series] = []
        for index, ((label, host, instance), points) in enumerate(by_series.items()):
            if index >= max_series:
                break
            name = " · ".join(p for p in (label, host, instance) if p)
            points = decimate(sorted(points), max_points)
            tips = [f"{name}\n{t:.1f} s: {format_number(v)}" for t, v in points]
            series.append(Series(name, points, PALETTE[index % len(PALETTE)],
                                 key=f"m{index}", tips=tips))
        note = (f"{len(by_series) - max_series} more series not drawn" if len(by_series) >
                max_series else "")
        charts.append(LineChart(f"monitor_{slug(family.replace('.*.', '.'))}", family,
                                "seconds since the run's first sample", unit_label(family),
                                series, x_log=False, y_log=False, x_format="number",
                                note=note))
    return charts


def decimate(points: list[tuple[float, float]], limit: int) -> list[tuple[float, float]]:
    """At most about ``limit`` points: per bucket of consecutive points, its lowest and highest
    in time order, so that a one-sample spike or drop survives (plain striding would lose it)."""
    if len(points) <= limit:
        return points
    size = math.ceil(len(points) / (limit // 2))
    kept: list[tuple[float, float]] = []
    for start in range(0, len(points), size):
        bucket = points[start:start + size]
        low = min(bucket, key=lambda p: p[1])
        high = max(bucket, key=lambda p: p[1])
        kept.extend(sorted({low, high}))
    return kept


def unit_label(metric: str) -> str:
    for suffix, unit in (("_bytes_per_s", "bytes/s"), ("_bytes", "bytes"), ("percent", "%"),
                         ("_watts", "W"), ("_w", "W"), ("_celsius", "°C"), ("_c", "°C"),
                         ("_mhz", "MHz")):
        if metric.endswith(suffix):
            return unit
    return "value"


# ---------------------------------------------------------------------------------------------
# Axes
# ---------------------------------------------------------------------------------------------


def link_heat_maps(inputs: list[Input]) -> list[HeatMap]:
    """`collscope links` runs as GB/s matrices (sender rows, receiver columns): one across
    nodes by host, one per node inside it by rank; slow links are the dark cells."""
    charts = []
    for source in inputs:
        for run in source.runs:
            links = [r for r in run.links if r.get("kind") == "link"
                     and _number(r.get("gbs")) is not None
                     and all(isinstance(r.get(f"{end}_{what}"), (str, int))
                             for end in ("src", "dst") for what in ("host", "rank"))]
            slow = [str(r.get("host")) for r in run.links if r.get("kind") == "node"
                    and r.get("verdict") == "slow"]
            extra = run.context.get("extra")
            thresholds = extra.get("thresholds") if isinstance(extra, dict) else None
            limits = "; ".join(f"{t.get('scope', '')} limit {t['limit_gbs']:.4g} GB/s"
                               for t in (thresholds if isinstance(thresholds, list) else [])
                               if isinstance(t, dict) and _number(t.get("limit_gbs")) is not None)
            groups: dict[str, list[dict[str, Any]]] = {}
            for link in links:
                key = "across nodes" if link.get("scope") == "inter" \
                    else f"inside {link.get('src_host')}"
                groups.setdefault(key, []).append(link)
            for key, group in groups.items():
                across = key == "across nodes"
                name = (lambda r, end: str(r[f"{end}_host"])) if across else \
                    (lambda r, end: str(r[f"{end}_rank"]))
                labels = sorted({name(r, "src") for r in group} | {name(r, "dst") for r in group},
                                key=lambda x: (len(x), x))
                cell = {(name(r, "src"), name(r, "dst")): float(r["gbs"]) for r in group}
                note = f"slow node(s): {', '.join(slow)}. " if across and slow else ""
                charts.append(HeatMap(
                    id=f"links-{slug(run.label)}-{slug(key)}",
                    title=f"{run.label}: link bandwidth {key} (GB/s)",
                    row_label="src host" if across else "src rank",
                    col_label="dst host" if across else "dst rank", rows=labels, cols=labels,
                    values=[[cell.get((a, b)) for b in labels] for a in labels], unit="GB/s",
                    bad="low", note=note + "Median receive time per direction, GB/s = size / "
                                           "time. " + (limits + "." if limits else "")))
    return charts


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
