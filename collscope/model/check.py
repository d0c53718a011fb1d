"""Validation: predictions against measurements the fit did not use (pure).

Every measured row is compared with the prediction for its collective, size and layout:
absolute percentage error of busbw, |predicted / measured - 1| x 100. Rows measured with the
library's own algorithm choice ("flat") are compared with ``auto`` over ring and tree (what
NCCL's tuner picks among; gloo runs a ring, so pass ``flat=("ring",)`` for gloo); rows measured
with collscope's hierarchical all-reduce with the hierarchical formula. Errors are summarised
per collective, layout and size band: median and max over rows, and how many rows.

The typical band is checked per measured size: the median of the size's measured times (both
placements, every run) is inside when it lies within the prediction's time_us_low..time_us_high;
each size band says how many of its sizes are, and the report the share over all sizes.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from collscope.model.costmodel import CostModel, ModelError, predict
from collscope.model.data import GroupKey, Measurements
from collscope.model.fit import Sample
from collscope.records.model import CheckBandRecord, CheckRowRecord

MiB = 1 << 20
SIZE_BANDS: tuple[tuple[int, float, str], ...] = (
    (0, MiB, "< 1 MiB"),
    (MiB, 16 * MiB, "1-16 MiB"),
    (16 * MiB, 256 * MiB, "16-256 MiB"),
    (256 * MiB, float("inf"), ">= 256 MiB"),
)
FLAT_ALGOS = ("ring", "tree")     # what NCCL / RCCL choose among for a flat all_reduce
METHOD = ("busbw absolute percentage error |predicted / measured - 1| x 100 per measured row "
          "(both placements, every run); median and max per size band")
BAND_CHECK = ("per measured size, whether the median of its measured times (both placements, "
              "every run) lies inside the prediction's typical band (time_us_low..time_us_high)")


def size_band(size_bytes: int) -> str:
    for low, high, name in SIZE_BANDS:
        if low <= size_bytes < high:
            return name
    return SIZE_BANDS[-1][2]


@dataclass
class CheckReport:
    rows: list[CheckRowRecord] = field(default_factory=list)
    bands: list[CheckBandRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    method: str = METHOD
    band_method: str = BAND_CHECK

    def coverage(self) -> dict[str, Any]:
        """How many measured medians lie inside the typical band, out of how many sizes."""
        sizes = sum(b.sizes for b in self.bands)
        inside = sum(b.medians_in_band for b in self.bands)
        return {"sizes": sizes, "medians_in_band": inside,
                "medians_in_band_pct": 100 * inside / sizes if sizes else None}


def check(model: CostModel, measurements: Measurements,
          flat: tuple[str, ...] = FLAT_ALGOS) -> CheckReport:
    """Errors of every measured row; ``flat`` rows are predicted with the fastest of these."""
    report = CheckReport(skipped=[*measurements.warnings, *measurements.skipped],
                         method=f"{METHOD}; predicted: flat rows by the fastest of "
                                f"{' and '.join(flat)}, hierarchical rows by the hierarchical "
                                "formula")
    fitted = {g.key for g in model.groups}
    for key, samples in measurements.groups.items():
        algo, candidates = ("hierarchical", ("hierarchical",)) if key.algo == "hierarchical" \
            else ("auto", flat)
        try:
            predictions = predict(model, key.collective, sorted({s.size_bytes for s in samples}),
                                  key.nodes, key.ranks_per_node, algo, candidates)
        except ModelError as error:
            report.skipped.append(f"{key.label}: not checked: {error}")
            continue
        by_size = {p.size_bytes: p for p in predictions}
        inside = {size: p.time_us_low <= _median_time(samples, size) <= p.time_us_high
                  for size, p in by_size.items()}
        rows = []
        for sample in samples:
            p = by_size[sample.size_bytes]
            # busbw ratio = time ratio inverted (same size, same bus factor).
            measured = p.busbw_gbs * p.time_us / sample.time_us
            rows.append(CheckRowRecord(key.collective, key.nodes, key.ranks_per_node,
                                 sample.size_bytes, measured, p.busbw_gbs,
                                 abs(p.busbw_gbs / measured - 1) * 100, p.algo, sample.source))
        report.rows.extend(rows)
        report.bands.extend(_bands(key, rows, key in fitted, inside))
    return report


def _median_time(samples: list[Sample], size: int) -> float:
    return statistics.median(s.time_us for s in samples if s.size_bytes == size)


def _bands(key: GroupKey, rows: list[CheckRowRecord], in_sample: bool,
           inside: dict[int, bool]) -> list[CheckBandRecord]:
    found = []
    for _, _, band in SIZE_BANDS:
        errors = [r.error_pct for r in rows if size_band(r.size_bytes) == band]
        sizes = [size for size in inside if size_band(size) == band]
        if errors:
            found.append(CheckBandRecord(key.collective, key.nodes, key.ranks_per_node, band,
                                     len(errors), statistics.median(errors), max(errors),
                                     in_sample, len(sizes), sum(inside[s] for s in sizes)))
    return found


