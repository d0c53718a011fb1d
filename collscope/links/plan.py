"""Rank pairs per round (pure), from the job layout and a node schedule.

Across nodes one rank per node exchanges (the node's first rank), or with ``per_gpu`` every
local rank i of node A with local rank i of node B at once, each on its own GPU and NIC.
Inside a node every local pair exchanges, by a tournament over the node's ranks, all nodes in
parallel.
"""

from __future__ import annotations

from collscope.links.schedule import Pair, random_pairs, round_robin


def ranks_by_node(devices: list[dict]) -> list[list[int]]:
    """World ranks of each node (layout order), from the layout's per-rank entries."""
    nodes: dict[int, list[int]] = {}
    for entry in sorted(devices, key=lambda d: d["rank"]):
        nodes.setdefault(int(entry["node"]), []).append(int(entry["rank"]))
    return [nodes[n] for n in sorted(nodes)]


def node_rounds(nodes: int, partners: int | None, seed: int = 0) -> list[list[Pair]]:
    return round_robin(nodes) if partners is None else random_pairs(nodes, partners, seed)


def inter_node_rounds(by_node: list[list[int]], rounds: list[list[Pair]],
                      per_gpu: bool) -> list[list[Pair]]:
    result = []
    for node_pairs in rounds:
        pairs: list[Pair] = []
        for a, b in node_pairs:
            if per_gpu:
                pairs += list(zip(by_node[a], by_node[b], strict=False))
            else:
                pairs.append((by_node[a][0], by_node[b][0]))
        result.append(pairs)
    return result


def intra_node_rounds(by_node: list[list[int]]) -> list[list[Pair]]:
    per_node = [[[(ranks[a], ranks[b]) for a, b in pairs] for pairs in round_robin(len(ranks))]
                for ranks in by_node]
    depth = max((len(r) for r in per_node), default=0)
    return [[pair for node in per_node if i < len(node) for pair in node[i]]
            for i in range(depth)]


def partner_of(pairs: list[Pair], rank: int) -> int | None:
    for a, b in pairs:
        if rank in (a, b):
            return b if rank == a else a
    return None
