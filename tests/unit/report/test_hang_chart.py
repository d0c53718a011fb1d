"""`collscope report` draws `collscope hang` records: groups x ranks, where each stopped."""

from __future__ import annotations

import json

from collscope.hang import analyse_paths, analysis_records
from collscope.records.load import load_inputs
from collscope.report import charts as ch
from collscope.report.html import render_report
from tests.conftest import fixture_path


def _hang_file(tmp_path, folder):
    analysis = analyse_paths([fixture_path("flight-recorder", folder)])
    path = tmp_path / "hang.jsonl"
    run = {"kind": "run", "command": "hang"}
    path.write_text("".join(json.dumps(r) + "\n" for r in [run, *analysis_records(analysis)]))
    return path


def test_nccl_job_map_shows_ranks_9_and_14_furthest_behind(tmp_path):
    inputs = load_inputs([str(_hang_file(tmp_path, "nvrx_gpu_error_2nd"))])
    (chart,) = ch.hang_heat_maps(inputs)
    assert chart.cols == [str(r) for r in range(16)] and chart.bad == "high"
    row = chart.values[chart.rows.index("37 TENSOR_MODEL_PARALLEL_GROUP")]
    # Ranks 8, 10, 11 issued up to #87771, rank 9 up to #87760: 11 calls behind.
    assert row[8:12] == [0, 11, 0, 0] and row[:8] == [None] * 8
    assert "Culprits: 9, 14." in chart.note
    html = render_report(inputs, generated_at=0)
    assert '<section id="hang"><h2>Hangs</h2>' in html and "where each rank stopped" in html


def test_a_dead_rank_is_a_blank_cell(tmp_path):
    (chart,) = ch.hang_heat_maps(load_inputs([str(_hang_file(tmp_path, "gloo_dead_4ranks"))]))
    assert chart.cols == ["0", "2", "3"] and chart.values == [[0, 0, 0]]
