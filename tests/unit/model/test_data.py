"""Grouping of bench JSON Lines records by the layout their run records give."""

from __future__ import annotations

import json

from collscope.model.data import GroupKey, collect
from collscope.records.load import parse_input


def _run(nodes: int, per_node: int) -> dict:
    return {"kind": "run", "command": "bench", "collscope_version": "0", "argv": [],
            "launcher": "torchrun", "backend": "gloo", "world_size": nodes * per_node,
            "nodes": nodes, "ranks_per_node": per_node, "hosts": [], "devices": [],
            "versions": {}, "env": {}}


def _result(size: int, time_us: float, world: int, algo: str = "flat", wrong: int = 0) -> dict:
    return {"kind": "result", "collective": "all_reduce", "size_bytes": size, "count": size // 4,
            "dtype": "float", "op": "sum", "root": -1, "in_place": True, "world_size": world,
            "iters": 5, "time_us": time_us, "busbw_gbs": 1.0, "algbw_gbs": 1.0,
            "wrong": wrong, "algo": algo}


def test_bench_records_group_by_run_layout_and_algorithm() -> None:
    records = [_run(2, 2), _result(1 << 20, 100.0, 4), _result(1 << 21, 180.0, 4),
               _result(1 << 20, 90.0, 4, algo="hierarchical"),
               _result(1 << 22, 1.0, 4, wrong=3),
               _run(0, 0), _result(1 << 20, 50.0, 2),
               _run(2, 1), _result(1 << 20, 70.0, 2)]
    text = "".join(json.dumps(r) + "\n" for r in records)
    found = collect([parse_input(text, "bench.jsonl")])
    assert {k: len(v) for k, v in found.groups.items()} == {
        GroupKey("all_reduce", 2, 1): 1, GroupKey("all_reduce", 2, 2): 2,
        GroupKey("all_reduce", 2, 2, "hierarchical"): 1}
    assert any("3 wrong elements" in line for line in found.skipped)
    assert any("node layout unknown" in line for line in found.skipped)
    assert [c["nodes"] for c in found.contexts] == [2, 2]
