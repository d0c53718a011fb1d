"""Cluster comparison (pure): what differs between nodes and ranks, findings merged."""

from __future__ import annotations

from collscope.doctor.cluster import NodeReport, differences, merge_findings, node_summary, rank_env
from tests.helpers import amd_node


def _node(number: int, **overrides) -> NodeReport:
    facts = amd_node(**overrides)
    return NodeReport(number, f"host{number}", [number], node_summary(facts))


def test_summary_holds_versions_counts_and_link_states():
    summary = node_summary(amd_node())
    assert summary["RCCL/NCCL"] == "2.21.5" and summary["GPU count"] == "8"
    assert summary["GPU model"] == "AMD Instinct MI300X" and summary["ROCm"] == "6.3.1"
    assert summary["nic eth0"] == "up" and "nic lo" not in summary
    assert summary["rdma mlx5_0:1"].startswith("ACTIVE")


def test_identical_nodes_agree():
    (finding,) = differences([_node(0), _node(1)], {0: {"A": "1"}, 1: {"A": "1"}}, {0: 0, 1: 1})
    assert finding.level == "ok" and "agree" in finding.title


def test_version_and_env_differences():
    odd = _node(1)
    odd.summary["RCCL/NCCL"] = "2.20.5"
    odd.summary["nic eth0"] = "down"
    envs = {0: {"NCCL_DEBUG": "WARN"}, 1: {"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5_0"}}
    found = {f.title: f for f in differences([_node(0), odd], envs, {0: 0, 1: 1})}
    assert found["RCCL/NCCL differs between nodes"].level == "fail"
    assert "node 1 (host1): 2.20.5" in found["RCCL/NCCL differs between nodes"].detail
    assert found["nic eth0 differs between nodes"].level == "warn"
    ib = found["NCCL_IB_HCA differs between ranks"]
    assert ib.detail == "rank 0 (node 0): <unset>; rank 1 (node 1): mlx5_0"
    assert "NCCL_DEBUG differs between ranks" not in found


def test_per_rank_device_lists_are_not_compared():
    assert rank_env({"HIP_VISIBLE_DEVICES": "3", "NCCL_DEBUG": "WARN"}) == {"NCCL_DEBUG": "WARN"}


def test_merge_tags_findings_that_not_every_node_has():
    same = {"id": "a", "level": "ok", "area": "gpu", "title": "8 GPUs", "detail": "", "fix": ""}
    only = {"id": "b", "level": "warn", "area": "env", "title": "NCCL_ALGO set", "detail": "",
            "fix": ""}
    nodes = [NodeReport(0, "h0", [0], {}, [same]), NodeReport(1, "h1", [1], {}, [same, only])]
    merged = merge_findings(nodes)
    assert [f.title for f in merged] == ["8 GPUs", "NCCL_ALGO set [node 1]"]
