"""Monitor samples as chart specs: one timeline per metric family, decimated; and the
recording's headline (how long, the peaks of GPU and network metrics)."""

from __future__ import annotations

import math
from collections import defaultdict

from collscope.records.load import Input, Run
from collscope.report.charts.axes import format_number
from collscope.report.charts.spec import PALETTE, Headline, LineChart, Series, as_number, slug


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
            start = min(s.ts for s in run.samples)
            for sample in run.samples:
                host = sample.host
                t = sample.ts - start
                for metric, value in sample.metrics.items():
                    number = as_number(value)
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


def monitor_headline(run: Run) -> Headline | None:
    """How long the run was watched, and the peak of each GPU and network metric family
    (the busiest GPU, the busiest link), the numbers a recording is looked at for."""
    if not run.samples:
        return None
    times = [s.ts for s in run.samples]
    peaks: dict[str, tuple[float, str]] = {}
    for sample in run.samples:
        for metric, value in sample.metrics.items():
            number = as_number(value)
            family, instance = metric_family(str(metric))
            if number is not None and family.startswith(("gpu.", "net.", "rdma.")) and \
                    (family not in peaks or number > peaks[family][0]):
                peaks[family] = (number, f"{sample.host} {instance}".strip())
    return Headline(f"{run.label}: {len(run.samples)} sample(s) over "
                    f"{max(times) - min(times):.1f} s", "info",
                    [f"peak {family}: {format_number(value)} {unit_label(family)} ({where})"
                     for family, (value, where) in sorted(peaks.items())])
