"""Robust verdicts on a link matrix (pure): slow links, slow nodes, and the stated threshold.

Threshold: a link is slow below ``fraction x reference`` (default 70%), where the reference is
the median over the links between healthy nodes. The robust spread (MAD scaled to a normal
sigma, scipy.stats.median_abs_deviation) is reported with it and each link's robust z-score
is kept, but does not decide: with a handful of iterations on shared hosts the spread of
healthy links is wide and bimodal, so ``median - k x MAD`` lands inside a 4x-slow cluster,
while a fixed fraction of the median separates a degraded link from noise. Across nodes it
runs in two passes, so that one slow node (which touches a
large share of all links: half of them with 4 nodes) cannot drag the reference down: nodes
whose best link is below ``fraction x`` the median best link are set aside first, then the
reference is taken over the links among the others. A node is slow when even its best link
is below the threshold (slow on all its links); its links are then reported as explained by
the node (verdict "node"), not as N-1 separate bad links. Judging nodes needs >= 3 nodes
(with two there is one pair and no way to tell which end is slow).

Inside a node links are judged the same way within each link type, and also against the
nominal bandwidth of their type where it is known (verdict "below-link-type" under
``expected_fraction`` of it).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from collscope.results import LinkRecord, NodeRecord

FAIL_VERDICTS = ("slow", "node", "below-link-type")


@dataclass(frozen=True)
class Threshold:
    scope: str
    reference_gbs: float
    mad_gbs: float
    limit_gbs: float
    fraction: float
    links: int

    def text(self) -> str:
        return (f"{self.scope}: slow below {self.fraction:.0%} of the median "
                f"{self.reference_gbs:.4g} GB/s = {self.limit_gbs:.4g} GB/s (median over "
                f"{self.links} links between healthy nodes; robust spread MAD x 1.4826 = "
                f"{self.mad_gbs:.3g} GB/s)")


def threshold(values: Sequence[float], fraction: float, scope: str) -> Threshold:
    from scipy.stats import median_abs_deviation  # type: ignore[import-untyped]

    reference = statistics.median(values)
    mad = float(median_abs_deviation(values, scale="normal")) if len(values) > 1 else 0.0
    return Threshold(scope, reference, mad, fraction * reference, fraction, len(values))


@dataclass
class NodeInfo:
    node: int
    host: str
    ranks: list[int]
    nics: list[str]


def _across_nodes(inter: list[LinkRecord], best: dict[int, float], fraction: float,
                  judged: bool) -> Threshold:
    """The inter-node threshold over the links among healthy nodes (see the module text)."""
    suspects: set[int] = set()
    if judged:
        first = fraction * statistics.median(best.values())
        suspects = {node for node, gbs in best.items() if gbs < first}
    healthy = [link.gbs for link in inter
               if link.src_node not in suspects and link.dst_node not in suspects]
    return threshold(healthy or [link.gbs for link in inter], fraction, "across nodes")


def judge(links: list[LinkRecord], nodes: Sequence[NodeInfo], fraction: float = 0.7,
          expected_fraction: float = 0.5, fixed: Sequence[Threshold] = (),
          ) -> tuple[list[NodeRecord], list[Threshold]]:
    """Set every link's verdict; the node records and the thresholds used. ``fixed``
    thresholds (by scope) are used as given instead of being taken from these links: a
    confirmation judges re-measured links against the first measurement's threshold."""
    given = {limit.scope: limit for limit in fixed}
    thresholds = []
    inter = [link for link in links if link.scope == "inter"]
    touching = {info.node: [link for link in inter if info.node in (link.src_node,
                                                                    link.dst_node)]
                for info in nodes}
    best = {node: max(link.gbs for link in own) for node, own in touching.items() if own}
    slow_nodes: set[int] = set()
    if inter:
        judged = len(best) >= 3
        limit = given.get("across nodes") or _across_nodes(inter, best, fraction, judged)
        thresholds.append(limit)
        if judged:
            slow_nodes = {node for node, gbs in best.items() if gbs < limit.limit_gbs}
        for link in inter:
            if link.gbs >= limit.limit_gbs:
                link.verdict = "ok"
            elif slow_nodes & {link.src_node, link.dst_node}:
                link.verdict = "node"
            else:
                link.verdict = "slow"
    intra = [link for link in links if link.scope == "intra"]
    for link_type in sorted({link.link_type or "unknown" for link in intra}):
        group = [link for link in intra if (link.link_type or "unknown") == link_type]
        scope = f"inside nodes ({link_type})"
        limit = given.get(scope) or threshold([link.gbs for link in group], fraction, scope)
        thresholds.append(limit)
        for link in group:
            if link.expected_gbs and link.gbs < expected_fraction * link.expected_gbs:
                link.verdict = "below-link-type"
            elif link.gbs < limit.limit_gbs:
                link.verdict = "slow"
            else:
                link.verdict = "ok"
    records = []
    for info in nodes:
        own = touching.get(info.node, [])
        records.append(NodeRecord(
            host=info.host, node=info.node, ranks=info.ranks, nics=info.nics,
            median_gbs=statistics.median(link.gbs for link in own) if own else None,
            best_gbs=best.get(info.node), links=len(own),
            verdict="slow" if info.node in slow_nodes else "ok"))
    return records, thresholds


def failed(links: Sequence[LinkRecord], nodes: Sequence[NodeRecord]) -> bool:
    """The acceptance gate: any failing link or node."""
    return any(link.verdict in FAIL_VERDICTS for link in links) or \
        any(node.verdict == "slow" for node in nodes)
