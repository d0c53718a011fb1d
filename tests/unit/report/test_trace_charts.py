"""`collscope report` draws `collscope trace` records: step bars, efficiency lines, lateness map."""

from __future__ import annotations

import json

from collscope.records.load import parse_input
from collscope.report.charts import BarChart, HeatMap, LineChart
from collscope.report.html import all_charts, render_report
from collscope.report.svg import render


def _jsonl() -> str:
    records = [
        {"kind": "run", "command": "trace"},
        {"kind": "trace_collective", "rank": 0, "collective": "all_reduce", "size_bytes": 1 << 20,
         "busbw_gbs": 5.0, "baseline_busbw_gbs": 10.0},
        {"kind": "trace_collective", "rank": 1, "collective": "all_reduce", "size_bytes": 1 << 20,
         "busbw_gbs": 7.0, "baseline_busbw_gbs": 10.0},
        {"kind": "trace_collective", "rank": 0, "collective": "broadcast", "size_bytes": 64,
         "busbw_gbs": 0.1, "baseline_busbw_gbs": None},
        {"kind": "trace_step", "rank": 0, "step": 3, "step_ms": 10.0, "compute_ms": 6.0,
         "comm_ms": 4.0, "exposed_comm_ms": 1.0, "idle_ms": 1.0},
        {"kind": "trace_rank", "rank": 0, "late_by_call": [0.0, 0.0, 2.0]},
        {"kind": "trace_rank", "rank": 1, "late_by_call": [5.0, 4.0, 0.0]},
        {"kind": "finding", "id": "straggler", "at_stake_ms": 4.0},
    ]
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_trace_records_become_three_chart_kinds():
    source = parse_input(_jsonl(), "trace.jsonl")
    assert len(source.runs) == 1 and len(source.runs[0].trace) == 7
    assert source.warnings == []
    charts = all_charts([source])
    bars = [c for c in charts if isinstance(c, BarChart)]
    lines = [c for c in charts if isinstance(c, LineChart)]
    heat = [c for c in charts if isinstance(c, HeatMap)]
    assert len(bars) == len(lines) == len(heat) == 1
    # compute only 6 - 3 hidden = 3, hidden 3, exposed 1, idle 1: adds up to compute+exposed+idle
    assert [values for _, _, values in bars[0].stacks] == [[3.0], [3.0], [1.0], [1.0]]
    job, baseline = lines[0].series
    assert job.points == [(1 << 20, 6.0)] and baseline.points == [(1 << 20, 10.0)]
    assert heat[0].bad == "high" and heat[0].values == [[0.0, 0.0, 2.0], [5.0, 4.0, 0.0]]
    assert "<svg" in render(heat[0])
    page = render_report([source], generated_at=0)
    assert 'id="trace"' in page


def test_lateness_map_says_which_clocks():
    heat = next(c for c in all_charts([parse_input(_jsonl(), "t.jsonl")])
                if isinstance(c, HeatMap))
    assert "(the traces' clocks)" in heat.note
    aligned = _jsonl().replace('{"kind": "run", "command": "trace"}', json.dumps(
        {"kind": "run", "command": "trace",
         "extra": {"clock_alignment": {"applied": True, "reference_rank": 0}}}))
    heat = next(c for c in all_charts([parse_input(aligned, "t.jsonl")])
                if isinstance(c, HeatMap))
    assert "(clocks aligned to rank 0's)" in heat.note
