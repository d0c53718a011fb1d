"""tune records in the report: one busbw-versus-size series per configuration."""

from __future__ import annotations

import json

from collscope.records.load import parse_input, tune_results
from collscope.report.charts import tune_charts


def tune_jsonl() -> str:
    records = [{"kind": "run", "command": "tune"},
               {"kind": "tune_trial", "index": 0, "status": "ok"}]
    for label, baseline, busbw, ratio in (("defaults", True, (1.0, 4.0), None),
                                          ("NCCL_ALGO=Tree", False, (2.0, 4.1), (2.0, 1.02))):
        for size, value, r in zip((1024, 1 << 20), busbw, ratio or (None, None)):
            records.append({"kind": "tune", "label": label, "baseline": baseline,
                            "config": {"NCCL_ALGO": None if baseline else "Tree"},
                            "collective": "all_reduce", "dtype": "float", "in_place": True,
                            "size_bytes": size, "world_size": 8, "time_us": 10.0,
                            "algbw_gbs": value, "busbw_gbs": value, "ratio": r,
                            "ratio_ci_low": r and r * 0.9, "ratio_ci_high": r and r * 1.1,
                            "verdict": "baseline" if baseline else "faster"})
    records.append({"kind": "tune", "label": "NCCL_ALGO=Ring", "baseline": False,
                    "config": {"NCCL_ALGO": "Ring"}, "verdict": "failed", "reason": "hung"})
    return "\n".join(json.dumps(r) for r in records)


def test_tune_records_become_one_chart_per_collective_with_a_series_per_configuration():
    source = parse_input(tune_jsonl(), "tune.jsonl")
    assert source.warnings == []                      # tune_trial records are known
    (chart,) = tune_charts([source])
    assert chart.title == "tune.jsonl: all_reduce busbw per configuration"
    assert [(s.label, s.dashed, s.points) for s in chart.series] == [
        ("defaults", True, [(1024, 1.0), (1 << 20, 4.0)]),
        ("NCCL_ALGO=Tree", False, [(1024, 2.0), (1 << 20, 4.1)])]
    assert chart.series[1].tips[0].endswith("2.000x the defaults [1.800, 2.200], faster")


def test_tune_results_for_compare_carry_the_configuration_as_algo():
    (run,) = parse_input(tune_jsonl(), "tune.jsonl").runs
    results = tune_results(run)
    assert [(r.algo, r.size_bytes, r.busbw_gbs) for r in results] == [
        ("tune: defaults", 1024, 1.0), ("tune: defaults", 1 << 20, 4.0),
        ("tune: NCCL_ALGO=Tree", 1024, 2.0), ("tune: NCCL_ALGO=Tree", 1 << 20, 4.1)]
