"""Bench results and `collscope model predict` records as chart specs: busbw and time versus
size per collective, every input overlaid; predicted against measured busbw."""

from __future__ import annotations

import statistics
from collections import defaultdict

from collscope.records.bench import BenchResult
from collscope.records.load import Input
from collscope.records.model import PredictionRecord
from collscope.report.charts.spec import (
    CollectiveView,
    ColorBook,
    Headline,
    LegendEntry,
    LineChart,
    Series,
    placement_name,
    slug,
)
from collscope.units import format_size


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
                          # None: no result was checked (nccl-tests' N/A), not 0 wrong
                          "wrong": sum(r.wrong or 0 for r in results)
                          if any(r.wrong is not None for r in results) else None})
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


# Model predictions


def prediction_charts(inputs: list[Input], colors: ColorBook | None = None) -> list[LineChart]:
    """Per collective with `collscope model predict` records: busbw versus size, one colour per
    layout (nodes x ranks per node), predicted dashed with open squares, measured (result rows
    of runs on that layout) solid with filled circles."""
    colors = colors or ColorBook()
    predicted: dict[str, dict[tuple[int, int], list[tuple[float, float]]]] = defaultdict(dict)
    for source in inputs:
        for run in source.runs:
            for p in run.predictions:
                layout = (p.nodes, p.ranks_per_node)
                predicted[p.collective].setdefault(layout, []).append(
                    (p.size_bytes, p.busbw_gbs))
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


def prediction_headline(inputs: list[Input]) -> Headline | None:
    """Per collective and layout, the prediction at its largest size: time with its band and
    busbw (the numbers `model predict` is asked for), extrapolations said."""
    largest: dict[tuple[str, int, int], PredictionRecord] = {}
    for source in inputs:
        for run in source.runs:
            for p in run.predictions:
                key = (p.collective, p.nodes, p.ranks_per_node)
                if key not in largest or p.size_bytes > largest[key].size_bytes:
                    largest[key] = p
    if not largest:
        return None
    lines = [f"{c} on {n} node(s) x {r} at {format_size(int(p.size_bytes))}: "
             f"{p.time_us:.4g} us ({p.time_us_low:.4g} to {p.time_us_high:.4g}), "
             f"busbw {p.busbw_gbs:.4g} GB/s, {p.algo}"
             + (" (extrapolated)" if p.extrapolated else "")
             for (c, n, r), p in sorted(largest.items())]
    return Headline(f"predicted: {lines[0]}" + (f"; and {len(lines) - 1} more layout(s)"
                                                 if len(lines) > 1 else ""), "info", lines)
