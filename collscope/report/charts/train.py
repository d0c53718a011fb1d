"""`collscope train` and `collscope tune` records as chart specs: per-configuration stacked
bars and tables; busbw per tune configuration with its speed-up."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from collscope.records.load import Input, Run
from collscope.records.tune import TuneRecord
from collscope.report.charts.spec import (
    PALETTE,
    BarChart,
    Headline,
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
            rows = sorted(run.train, key=lambda rec: (as_number(rec.step_time_ms) is None,
                                                      as_number(rec.step_time_ms) or 0.0))
            categories = [config_text(rec.config) for rec in rows]
            step = [as_number(rec.step_time_ms) or 0.0 for rec in rows]
            exposed = [min(max(as_number(rec.exposed_comm_ms) or 0.0, 0.0), s)
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
            by_collective: dict[str, dict[str, list[TuneRecord]]] = defaultdict(dict)
            for rec in run.tune:
                if rec.size_bytes and rec.busbw_gbs and rec.collective:
                    by_collective[rec.collective].setdefault(rec.label, []).append(rec)
            for collective, by_label in by_collective.items():
                series = []
                for number, (label, recs) in enumerate(by_label.items()):
                    recs = sorted(recs, key=lambda r: r.size_bytes or 0)
                    baseline = any(r.baseline for r in recs)
                    tips = [f"{label}\n{format_size(r.size_bytes or 0)}: busbw "
                            f"{r.busbw_gbs or 0:.4g} GB/s, {_ratio_text(r)}" for r in recs]
                    points = [(float(r.size_bytes or 0), r.busbw_gbs or 0.0) for r in recs]
                    series.append(Series(label, points,
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


def _ratio_text(record: TuneRecord) -> str:
    if record.baseline:
        return "the defaults"
    low, high = as_number(record.ratio_ci_low), as_number(record.ratio_ci_high)
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"{as_number(record.ratio) or 0:.3f}x the defaults{ci}, {record.verdict}"


def tune_headline(run: Run) -> Headline | None:
    """The sweep's decision: which configuration wins at how many sizes (the fastest one
    faster than the defaults beyond noise at each size, else the defaults), with its
    speed-ups and their intervals."""
    winners = [r for r in run.tune if r.winner and isinstance(r.label, str)]
    if not winners:
        return None
    better = [r for r in winners if not r.baseline]
    if not better:
        return Headline(f"{run.label}: the defaults win at all {len(winners)} size(s): no "
                        "configuration is faster beyond noise", "pass")
    counts: dict[str, int] = defaultdict(int)
    for r in better:
        counts[r.label] += 1
    best = max(counts, key=lambda label: counts[label])
    return Headline(f"{run.label}: {best} wins at {counts[best]} of {len(winners)} size(s)",
                    "info", [f"{r.collective} {format_size(r.size_bytes)}: "
                             f"{r.label}, {_ratio_text(r)}" for r in better if r.size_bytes])
