"""`collscope report` draws `collscope trace` records: step bars, efficiency lines, lateness map."""

from __future__ import annotations

import json
from typing import Any

from collscope.records.finding import FindingRecord
from collscope.records.load import parse_input
from collscope.records.trace import TraceCollectiveRecord, TraceRankRecord, TraceStepRecord
from collscope.report.charts import BarChart, HeatMap, LineChart
from collscope.report.html import all_charts, render_report
from collscope.report.svg import render
from collscope.report.trace_charts import trace_headline


def _collective(rank: int, collective: str, size: int, busbw: float,
                baseline: float | None) -> dict[str, Any]:
    return TraceCollectiveRecord(
        rank=rank, collective=collective, dtype="Float", size_bytes=size, group="0",
        group_size=2, calls=10, calls_per_step=1.0, kernel_us_p50=100.0, kernel_us_p95=120.0,
        kernel_ms_total=1.0, algbw_gbs=busbw, busbw_gbs=busbw, step_share_percent=10.0,
        baseline_busbw_gbs=baseline).to_dict()


def _rank(rank: int, late_by_call: list[float]) -> dict[str, Any]:
    return TraceRankRecord(
        rank=rank, path=f"rank{rank}.json", timing="gpu kernels", window="steps 1-4",
        comm_kernel_ms=4.0, compute_kernel_ms=6.0, exposed_comm_ms=1.0, overlap_percent=None,
        late_calls=0, wait_caused_ms=0.0, calls=3, late_by_call=late_by_call).to_dict()


def _jsonl() -> str:
    records = [
        {"kind": "run", "command": "trace"},
        _collective(0, "all_reduce", 1 << 20, 5.0, 10.0),
        _collective(1, "all_reduce", 1 << 20, 7.0, 10.0),
        _collective(0, "broadcast", 64, 0.1, None),
        TraceStepRecord(rank=0, step=3, step_ms=10.0, compute_ms=6.0, comm_ms=4.0,
                        exposed_comm_ms=1.0, overlap_percent=None, idle_ms=1.0).to_dict(),
        _rank(0, [0.0, 0.0, 2.0]),
        _rank(1, [5.0, 4.0, 0.0]),
        FindingRecord(id="straggler", level="info", title="", detail="", fix="",
                      at_stake_ms=4.0).to_dict(),
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


def test_the_trace_section_opens_with_its_findings_and_leaves_unknown_layout_out():
    records = [json.loads(line) for line in _jsonl().splitlines()]
    records[0].update(world_size=2, nodes=0, ranks_per_node=0, started_at=0)  # not known
    records[-1].update(level="warn", title="rank 1 is late", test="binomial p = 0.004")
    records[5].update(exposed_comm_ms=3.0, overlap_percent=40.0, late_calls=0)
    records[6].update(exposed_comm_ms=1.5, overlap_percent=70.0, late_calls=2,
                      wait_caused_ms=9.0)
    source = parse_input("\n".join(json.dumps(r) for r in records) + "\n", "trace.jsonl")
    headline = trace_headline(source.runs[0])
    assert headline is not None and headline.level == "warn"
    assert headline.text == ("trace.jsonl: 1 finding(s); first: rank 1 is late (at stake 4 ms "
                             "per step)")
    assert headline.details == [
        "[warn] rank 1 is late; decided by: binomial p = 0.004",
        "exposed communication per rank: 1.5 to 3 ms, overlapped 40 to 70%",
        "rank 1 started 2 call(s) last; the others waited 9 ms for it"]
    page = render_report([source], generated_at=0)
    assert page.index(headline.text) < page.index("<svg") < page.index('id="contexts"')
    contexts = page[page.index('id="contexts"'):]
    assert "<th>world size</th><td>2</td>" in contexts
    for unknown in ("<th>nodes</th>", "<th>ranks per node</th>", "<th>started</th>"):
        assert unknown not in contexts
