"""`collscope report` draws `model predict` records against measured rows per node count."""

from __future__ import annotations

import json
from pathlib import Path

from collscope.records.load import load_inputs, parse_input
from collscope.report.charts import prediction_charts
from collscope.report.html import render_report
from tests.conftest import fixture_path


def _predictions(nodes: int, busbw: float) -> str:
    return "".join(json.dumps({
        "kind": "prediction", "collective": "all_reduce", "size_bytes": size, "nodes": nodes,
        "ranks_per_node": 8, "world_size": nodes * 8, "algo": "ring", "time_us": 1.0,
        "busbw_gbs": busbw, "time_us_low": 0.9, "time_us_high": 1.1}) + "\n"
        for size in (1 << 28, 1 << 30))


def test_predictions_alone_are_an_input() -> None:
    source = parse_input(_predictions(8, 300.0) + '{"kind": "prediction"}\n', "p.jsonl")
    assert [len(run.predictions) for run in source.runs] == [2]
    assert source.warnings == ["p.jsonl: line 3: prediction record without collective, "
                               "size_bytes, nodes, ranks_per_node, world_size, algo, time_us, "
                               "busbw_gbs, time_us_low, time_us_high; skipped"]


def test_measured_and_predicted_series_per_layout(tmp_path: Path) -> None:
    predicted = tmp_path / "pred.jsonl"
    predicted.write_text(_predictions(8, 310.0) + _predictions(16, 305.0))
    measured = str(fixture_path("nccl-tests-logs", "h100_8node_default_nccl_issue309.txt"))
    inputs = load_inputs([str(predicted), measured])
    (chart,) = prediction_charts(inputs)
    labels = [s.label for s in chart.series]
    assert labels == ["8 node(s) x 8 predicted", "8 node(s) x 8 measured",
                      "16 node(s) x 8 predicted"]
    eight_measured = chart.series[1]
    assert len(eight_measured.points) == 14                 # median of the 2 placements
    assert (8589934592, (320.70 + 320.57) / 2) in eight_measured.points
    assert chart.series[0].dashed and not eight_measured.dashed
    assert chart.series[0].color == eight_measured.color    # one colour per layout
    page = render_report(inputs, generated_at=0.0)
    assert "all_reduce: measured vs predicted busbw" in page
