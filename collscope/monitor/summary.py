"""The run summary: mean and peak per metric, bytes moved per interface, and its text form.

Pure: the builder only accumulates numbers (no record is kept, so a day-long run costs the same
memory as a minute), and ``format_summary`` only makes strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from collscope.records.sample import SampleRecord
from collscope.units import format_bytes

SUMMARY_METHOD = ("per metric over the samples that have it (a metric absent from a sample "
                  "is not counted as 0): mean weighted by the seconds each sample covers (a "
                  "rate's mean is then its bytes moved / time; a short final interval does not "
                  "count as a full one), peak = max, min, last; each rate covers the interval "
                  "before its sample; bytes moved = sum of counter deltas since the baseline "
                  "reading (intervals where a counter went backwards add nothing)")


@dataclass
class MetricStats:
    """Mean, peak (max) and minimum of one metric over the samples that had it."""

    samples: int
    mean: float
    peak: float
    min: float
    last: float


@dataclass
class Summary:
    host: str
    interval_s: float
    started_at: float | None
    duration_s: float
    samples: int
    metrics: dict[str, MetricStats]
    bytes_moved: dict[str, float]
    method: str = SUMMARY_METHOD
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        extra = data.pop("extra")
        data.update(extra)
        data["kind"] = "summary"
        return data


class SummaryBuilder:
    """Accumulates count, sums (plain and weighted by seconds), max, min and last per metric,
    one sample at a time."""

    def __init__(self) -> None:
        self.samples = 0
        self._count: dict[str, int] = {}
        self._sum: dict[str, float] = {}
        self._weighted: dict[str, float] = {}
        self._seconds: dict[str, float] = {}
        self._max: dict[str, float] = {}
        self._min: dict[str, float] = {}
        self._last: dict[str, float] = {}

    def add(self, sample: SampleRecord, seconds: float = 1.0) -> None:
        """Count ``sample``, which covers ``seconds`` (the interval before it; the default
        gives every sample the same weight)."""
        self.samples += 1
        for name, value in sample.values.items():
            if name not in self._count:
                self._count[name] = 0
                self._sum[name] = self._weighted[name] = self._seconds[name] = 0.0
                self._max[name] = self._min[name] = value
            self._count[name] += 1
            self._sum[name] += value
            self._weighted[name] += value * seconds
            self._seconds[name] += seconds
            self._max[name] = max(self._max[name], value)
            self._min[name] = min(self._min[name], value)
            self._last[name] = value

    def _mean(self, name: str) -> float:
        """Time-weighted; the plain mean only if no time passed at all."""
        if self._seconds[name] > 0:
            return self._weighted[name] / self._seconds[name]
        return self._sum[name] / self._count[name]

    def build(self, *, host: str, interval_s: float, started_at: float | None,
              duration_s: float, bytes_moved: Mapping[str, float], **extra: Any) -> Summary:
        metrics = {
            name: MetricStats(samples=count, mean=round(self._mean(name), 3),
                              peak=self._max[name], min=self._min[name], last=self._last[name])
            for name, count in sorted(self._count.items())
        }
        return Summary(host=host, interval_s=interval_s, started_at=started_at,
                       duration_s=round(duration_s, 3), samples=self.samples, metrics=metrics,
                       bytes_moved=dict(bytes_moved), extra=extra)


# -- text -----------------------------------------------------------------------------------

def human_bytes(value: float, binary: bool = True) -> str:
    """1536 -> '1.50 KiB' (binary, for memory) or 1.5e9 -> '1.50 GB' (decimal, for traffic)."""
    return format_bytes(value, decimal=not binary, places=2, trim_whole=False)


def format_value(metric: str, value: float) -> str:
    """A metric value with its unit, chosen by the name's suffix."""
    if metric.endswith("_bytes_per_s"):
        return human_bytes(value, binary=False) + "/s"
    if metric.endswith("_bytes"):
        return human_bytes(value, binary=True)
    if metric.endswith("percent"):
        return f"{value:.1f} %"
    if metric.endswith("_w"):
        return f"{value:.1f} W"
    if metric.endswith("_c"):
        return f"{value:.1f} C"
    if metric.endswith("cpu_seconds_per_s"):
        return f"{value:.2f} cores"
    if metric.endswith("_per_s"):
        return f"{value:.3g}/s"
    return f"{value:.4g}"


def format_summary(summary: Summary) -> list[str]:
    """Readable lines: header with method, metric table (idle rates left out), bytes moved."""
    lines = [
        f"# collscope monitor summary: {summary.samples} sample"
        f"{'' if summary.samples == 1 else 's'} over {summary.duration_s:.1f} s "
        f"on {summary.host}, interval {summary.interval_s:g} s",
        f"# {SUMMARY_METHOD}",
        "# rates in decimal units (1 MB/s = 1e6 B/s); memory in binary units (1 GiB = 2^30 B)",
    ]
    idle = [name for name, stats in summary.metrics.items()
            if name.endswith("_per_s") and stats.peak == 0]
    shown = {name: stats for name, stats in summary.metrics.items() if name not in idle}
    if shown:
        width = max(len(name) for name in shown)
        lines.append(f"{'metric':<{width}}  {'mean':>14}  {'peak':>14}")
        for name, stats in shown.items():
            lines.append(f"{name:<{width}}  {format_value(name, stats.mean):>14}  "
                         f"{format_value(name, stats.peak):>14}")
    if idle:
        lines.append(f"# {len(idle)} rates stayed 0 and are not shown")
    moved = bytes_moved_by_endpoint(summary.bytes_moved)
    if moved:
        lines.append("bytes moved:")
        width = max(len(endpoint) for endpoint in moved)
        for endpoint, directions in moved.items():
            parts = "  ".join(f"{direction} {human_bytes(value, binary=False):>10}"
                              for direction, value in directions.items())
            lines.append(f"  {endpoint:<{width}}  {parts}")
    return lines


def bytes_moved_by_endpoint(bytes_moved: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """{'net.lo.rx_bytes': 5, 'net.lo.tx_bytes': 5} -> {'net.lo': {'rx': 5, 'tx': 5}}.

    Endpoints that moved nothing in any direction are left out.
    """
    grouped: dict[str, dict[str, float]] = {}
    for name, value in sorted(bytes_moved.items()):
        endpoint, _, metric = name.rpartition(".")
        grouped.setdefault(endpoint, {})[metric.removesuffix("_bytes")] = value
    return {endpoint: directions for endpoint, directions in grouped.items()
            if any(v > 0 for v in directions.values())}
