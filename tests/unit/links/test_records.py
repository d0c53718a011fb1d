"""Measurements -> link records: hosts, devices, NICs and link types of both ends (pure)."""

from __future__ import annotations

import pytest

from collscope.links.config import LinksConfig
from collscope.links.run import link_records, phases_for, rank_nic, resolve_nics

# Two nodes x two GPUs.
DEVICES = [{"rank": r, "node": r // 2, "host": f"node{r // 2}", "device": r % 2,
            "device_type": "cuda", "local_rank": r % 2} for r in range(4)]
MATRIX = [["self", "xgmi"], ["xgmi", "self"]]


def _info() -> list[dict]:
    return [{"matrix": MATRIX if r % 2 == 0 else None,
             "nearest": {0: "mlx5_0", 1: "mlx5_1"} if r % 2 == 0 else {},
             "pinned": "eth1 (NCCL_SOCKET_IFNAME)" if r == 3 else None} for r in range(4)]


def test_nics_come_from_the_pinning_variable_else_the_nearest_nic():
    info = _info()
    resolve_nics(info, DEVICES)
    assert [i["nic"] for i in info] == ["mlx5_0 (nearest to its GPU)",
                                        "mlx5_1 (nearest to its GPU)",
                                        "mlx5_0 (nearest to its GPU)",
                                        "eth1 (NCCL_SOCKET_IFNAME)"]
    assert rank_nic({"GLOO_SOCKET_IFNAME": "ens5"}) == "ens5 (GLOO_SOCKET_IFNAME)"
    assert rank_nic({}) is None


def test_records_carry_both_ends_and_the_intra_node_link_type():
    info = _info()
    resolve_nics(info, DEVICES)
    common = {"size": 1 << 20, "latency": 1e-5, "stop": "all"}
    measured = [{"scope": "inter", "round": 0, "src": 0, "dst": 2, "times": [1e-3, 2e-3, 3e-3],
                 **common},
                {"scope": "intra", "round": 0, "src": 1, "dst": 0, "times": [1e-4] * 3,
                 **common}]
    inter, intra = link_records(measured, DEVICES, info)
    assert (inter.src_host, inter.dst_host, inter.src_device, inter.dst_device) == \
        ("node0", "node1", "cuda:0", "cuda:0")
    assert inter.time_us == pytest.approx(2000) and inter.gbs == pytest.approx(
        (1 << 20) / 2e-3 / 1e9)
    assert inter.link_type is None and inter.iters == 3
    assert (intra.link_type, intra.expected_gbs) == ("xgmi", 64.0)
    assert intra.src_nic == "mlx5_1 (nearest to its GPU)"


def test_phases_across_then_inside_nodes():
    by_node = [[0, 1], [2, 3], [4, 5], [6, 7]]
    inter, intra = phases_for(LinksConfig(), by_node)
    assert (inter.scope, len(inter.rounds)) == ("inter", 3)
    assert all(len(pairs) == 2 for pairs in inter.rounds)           # one rank per node
    assert intra.rounds == [[(0, 1), (2, 3), (4, 5), (6, 7)]]
    (every, _) = phases_for(LinksConfig(per_gpu=True), by_node)
    assert all(len(pairs) == 4 for pairs in every.rounds)           # every local rank
    (single,) = phases_for(LinksConfig(), [[0, 1, 2]])
    assert single.scope == "intra" and len(single.rounds) == 3
