"""The ``sample`` record monitor writes, and how its flat metric names split into parts.

A sample is one JSON Lines record, flushed as soon as it exists::

    {"kind": "sample", "ts": 1718000000.25, "host": "node0", "metrics": {"cpu.percent": 12.5,
     "net.eth0.rx_bytes_per_s": 1.2e9, "gpu.0.util_percent": 97.0, ...}}

``ts`` is seconds since the epoch (float). Metric names are flat and stable (part of the public
interface, like every field of a record): ``<family>.<labels...>.<metric>`` where the labels
depend on the family: none for ``cpu``/``mem``/``proc``, the interface for ``net`` (which may
itself contain dots, e.g. VLAN ``eth0.100``), device and port for ``rdma``, the index for
``gpu``. Rates end in ``_per_s`` and cover the interval since the previous sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from collscope.records.base import Record

SAMPLE_KIND = "sample"


class SampleRecord(Record, tag=SAMPLE_KIND):
    """One sample: when, where, and the metrics that had a value."""

    ts: float
    host: str
    metrics: dict[str, float | None] = {}    # 0.x wrote null for a source with no value

    kind_before: ClassVar[str | None] = "ts"
    joins: ClassVar[str | None] = "samples"

    @property
    def values(self) -> dict[str, float]:
        """The metrics that had a value this time."""
        return {name: value for name, value in self.metrics.items() if value is not None}


@dataclass(frozen=True)
class MetricName:
    """A flat metric name split into family, labels and the metric itself."""

    family: str
    labels: dict[str, str]
    metric: str


def split_metric(name: str) -> MetricName:
    """``net.eth0.100.rx_bytes_per_s`` -> family net, iface eth0.100, metric rx_bytes_per_s.

    ``rdma.<dev>.<port>.hw.<counter>_per_s`` keeps ``hw.<counter>_per_s`` as the metric. Names
    of an unknown shape get the family and the last part, with the middle as label ``id``.
    """
    parts = name.split(".")
    family = parts[0]
    if len(parts) == 1:
        return MetricName(family, {}, "")
    if family in ("cpu", "mem", "proc") and len(parts) == 2:
        return MetricName(family, {}, parts[1])
    if family == "net" and len(parts) >= 3:
        return MetricName(family, {"iface": ".".join(parts[1:-1])}, parts[-1])
    if family == "gpu" and len(parts) == 3:
        return MetricName(family, {"gpu": parts[1]}, parts[2])
    if family == "rdma" and len(parts) >= 4:
        labels = {"device": parts[1], "port": parts[2]}
        return MetricName(family, labels, ".".join(parts[3:]))
    middle = ".".join(parts[1:-1])
    return MetricName(family, {"id": middle} if middle else {}, parts[-1])
