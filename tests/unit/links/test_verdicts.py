"""Slow links and slow nodes from a link matrix (pure), with the stated threshold."""

from __future__ import annotations

import itertools

import pytest

from collscope.links.expected import NOMINAL_GBS, node_topology, pair_link
from collscope.links.verdicts import NodeInfo, failed, judge
from collscope.records.links import LinkRecord


def _link(src: int, dst: int, gbs: float, scope: str = "inter", link_type: str | None = None,
          expected: float | None = None) -> LinkRecord:
    return LinkRecord(src_host=f"n{src}", dst_host=f"n{dst}", src_rank=src, dst_rank=dst,
                      src_device="cpu", dst_device="cpu", src_nic=None, dst_nic=None,
                      scope=scope, link_type=link_type, size_bytes=1 << 26, iters=5,
                      time_us=(1 << 26) / gbs / 1e3, gbs=gbs, expected_gbs=expected,
                      src_node=src if scope == "inter" else 0,
                      dst_node=dst if scope == "inter" else 0)


def _matrix(n: int, speed) -> list[LinkRecord]:
    return [_link(a, b, speed(a, b)) for a, b in itertools.permutations(range(n), 2)]


def _nodes(n: int) -> list[NodeInfo]:
    return [NodeInfo(node=i, host=f"n{i}", ranks=[i], nics=[]) for i in range(n)]


@pytest.mark.parametrize("n,slow", [(3, 0), (4, 2), (8, 5), (16, 11)])
def test_a_quarter_rate_node_is_the_node_not_its_links(n, slow):
    links = _matrix(n, lambda a, b: 2.5 if slow in (a, b) else 10.0 + (a + b) % 3 * 0.5)
    nodes, (limit,) = judge(links, _nodes(n))
    assert [node.host for node in nodes if node.verdict == "slow"] == [f"n{slow}"]
    for link in links:
        assert link.verdict == ("node" if slow in (link.src_node, link.dst_node) else "ok")
    assert limit.reference_gbs >= 10.0 and limit.limit_gbs == pytest.approx(
        0.7 * limit.reference_gbs)
    assert "70% of the median" in limit.text()
    assert failed(links, nodes)


def test_one_bad_link_between_healthy_nodes_is_a_link():
    links = _matrix(4, lambda a, b: 3.0 if (a, b) == (1, 3) else 10.0)
    nodes, _ = judge(links, _nodes(4))
    assert all(node.verdict == "ok" for node in nodes)
    assert [(x.src_rank, x.dst_rank) for x in links if x.verdict == "slow"] == [(1, 3)]
    assert failed(links, nodes)


def test_noise_within_the_fraction_passes():
    links = _matrix(6, lambda a, b: 10.0 * (0.8 + 0.05 * ((a * 7 + b * 3) % 5)))
    nodes, _ = judge(links, _nodes(6))
    assert not failed(links, nodes)
    assert all(node.median_gbs is not None and node.links == 10 for node in nodes)


def test_two_nodes_cannot_blame_either():
    links = [_link(0, 1, 1.0), _link(1, 0, 1.0)]
    nodes, _ = judge(links, _nodes(2))
    assert all(node.verdict == "ok" for node in nodes) and not failed(links, nodes)


def test_intra_node_pairs_judged_by_link_type_and_nominal():
    xgmi = NOMINAL_GBS["xgmi"]
    links = [_link(a, b, 50.0, "intra", "xgmi", xgmi) for a, b in [(0, 1), (1, 0), (0, 2),
                                                                   (2, 0)]]
    links += [_link(1, 2, 20.0, "intra", "xgmi", xgmi), _link(2, 1, 48.0, "intra", "xgmi", xgmi)]
    nodes, thresholds = judge(links, [NodeInfo(0, "n0", [0, 1, 2], [])])
    assert links[4].verdict == "below-link-type"          # 20 < 50% of 64
    assert all(link.verdict == "ok" for i, link in enumerate(links) if i != 4)
    assert thresholds[0].scope == "inside nodes (xgmi)"
    assert nodes[0].median_gbs is None                    # no inter-node links on one node


def test_link_types_come_from_the_doctor_topology():
    from tests.conftest import fixture_path

    # rocm-smi --showtopo of an 8-GPU MI308X node: XGMI between every pair.
    path = fixture_path("tool-outputs", "rocm-smi_showtopo_mi308x_8gpu.txt")
    matrix = node_topology({"rocm-smi--showtopo.txt": path.read_text()})[0]
    assert matrix is not None and len(matrix) == 8
    assert pair_link(matrix, 0, 1) == ("xgmi", 64.0)
    assert pair_link(matrix, 6, 7) == ("xgmi", 64.0)
    assert pair_link(matrix, 0, 99) == (None, None) and pair_link(None, 0, 1) == (None, None)


def _node_pairs(ranks: int, speed, link_type: str = "xgmi") -> list[LinkRecord]:
    return [_link(a, b, speed(a, b), "intra", link_type, NOMINAL_GBS[link_type])
            for a, b in itertools.permutations(range(ranks), 2)]


@pytest.mark.parametrize("ranks,slow", [(3, 1), (4, 2), (8, 5)])
def test_a_gpu_slow_on_every_pair_is_the_gpu_not_its_links(ranks, slow):
    links = _node_pairs(ranks, lambda a, b: 12.0 if slow in (a, b) else 50.0 + (a + b) % 3)
    nodes, (limit,) = judge(links, [NodeInfo(0, "n0", list(range(ranks)), [])])
    assert nodes[0].slow_ranks == [slow] and nodes[0].verdict == "ok"
    for link in links:
        assert link.verdict == ("gpu" if slow in (link.src_rank, link.dst_rank) else "ok")
    assert limit.reference_gbs >= 50.0                    # the slow GPU set aside first
    assert failed(links, nodes)


def test_one_bad_gpu_pair_is_a_link_and_two_gpus_on_two_ranks_blame_neither():
    links = _node_pairs(4, lambda a, b: 10.0 if {a, b} == {1, 3} else 50.0)
    nodes, _ = judge(links, [NodeInfo(0, "n0", [0, 1, 2, 3], [])])
    assert nodes[0].slow_ranks == []
    assert {(x.src_rank, x.dst_rank) for x in links if x.verdict != "ok"} == {(1, 3), (3, 1)}
    pair = _node_pairs(2, lambda a, b: 10.0)              # 2 GPUs: no pair without either
    nodes, _ = judge(pair, [NodeInfo(0, "n0", [0, 1], [])])
    assert nodes[0].slow_ranks == [] and all(x.verdict == "below-link-type" for x in pair)


def test_a_node_slow_in_one_direction_is_the_node():
    # Node 1's NIC sends at a quarter rate; what it receives is fine.
    links = _matrix(4, lambda a, b: 2.5 if a == 1 else 10.0)
    nodes, (limit,) = judge(links, _nodes(4))
    assert [node.host for node in nodes if node.verdict == "slow"] == ["n1"]
    assert {(x.src_rank, x.verdict) for x in links if x.verdict != "ok"} == {(1, "node")}
    assert limit.reference_gbs == 10.0                    # its sends set aside first


def test_a_gpu_slow_in_one_direction_is_the_gpu():
    links = _node_pairs(4, lambda a, b: 10.0 if b == 3 else 50.0)    # GPU 3 receives slowly
    nodes, _ = judge(links, [NodeInfo(0, "n0", [0, 1, 2, 3], [])])
    assert nodes[0].slow_ranks == [3]
    assert {(x.dst_rank, x.verdict) for x in links if x.verdict != "ok"} == {(3, "gpu")}
