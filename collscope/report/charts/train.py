"""`collscope train` and `collscope tune` records as chart specs: per-configuration stacked
bars and tables; busbw per tune configuration with its speed-up."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from collscope.records.load import Input
from collscope.report.charts.spec import (
    PALETTE,
    BarChart,
    LineChart,
    Series,
    TrainView,
    as_number,
    slug,
)
from collscope.units import format_size

TRAIN_COLUMNS = ("step_time_ms", "step_time_ms_nosync", "exposed_comm_ms", "pure_comm_ms",
                 "overlap_fraction", "tokens_per_s", "comm_bytes_per_step", "peak_memory_bytes",
                 "loss_first", "loss_last")


def config_text(config: Any) -> str:
    if isinstance(config, dict):
        return ", ".join(f"{k}={v}" for k, v in config.items()) or "(defaults)"
    return "(defaults)" if config is None else str(config)




def train_views(inputs: list[Input]) -> list[TrainView]:
    """Per run with train records: the records fastest first, and step time split in a chart."""
    views = []
    for source in inputs:
        for run in source.runs:
            if not run.train:
                continue
            rows = sorted(run.train, key=lambda rec: (as_number(rec.get("step_time_ms")) is None,
                                                      as_number(rec.get("step_time_ms")) or 0.0))
            categories = [config_text(rec.get("config")) for rec in rows]
            step = [as_number(rec.get("step_time_ms")) or 0.0 for rec in rows]
            exposed = [min(max(as_number(rec.get("exposed_comm_ms")) or 0.0, 0.0), s)
                       for rec, s in zip(rows, step)]
            chart = BarChart(
                f"train_{slug(run.label)}", f"{run.label}: step time per configuration",
                "milliseconds per step", categories,
                [("step without exposed comm", PALETTE[0], [s - e for s, e in zip(step, exposed)]),
                 ("exposed communication", PALETTE[3], exposed)],
                note="fastest first; exposed comm = step time - step time without gradient sync")
            views.append(TrainView(run, rows, chart))
    return views


# Tune


def tune_charts(inputs: list[Input]) -> list[LineChart]:
    """Per tune run and collective: busbw versus size, one series per configuration (the
    defaults dashed); hover text gives the speed-up, its interval and the verdict."""
    charts: list[LineChart] = []
    for source in inputs:
        for run in source.runs:
            by_collective: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
            for rec in run.tune:
                size, busbw = as_number(rec.get("size_bytes")), as_number(rec.get("busbw_gbs"))
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
    low, high = as_number(record.get("ratio_ci_low")), as_number(record.get("ratio_ci_high"))
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"{as_number(record.get('ratio')) or 0:.3f}x the defaults{ci}, {record.get('verdict')}"
