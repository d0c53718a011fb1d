"""Robust verdicts on a link matrix (pure): slow links, slow nodes and GPUs, the threshold.

Threshold: a link is slow below ``fraction x reference`` (default 70%), where the reference is
the median over the links between healthy endpoints. The robust spread (MAD scaled to a normal
sigma, scipy.stats.median_abs_deviation) is reported with it but does not decide: with a
handful of iterations on shared hosts the spread of healthy links is wide and bimodal, so
``median - k x MAD`` lands inside a 4x-slow cluster, while a fixed fraction of the median
separates a degraded link from noise. The reference is taken in two passes, so that one slow
endpoint (which touches a large share of all links: half of them with 4 nodes) cannot drag it
down: endpoints whose best link in their weaker direction (sending or receiving) is below
``fraction x`` the median of those are set aside first, then the reference is the median over
the links among the others.

Across nodes the endpoints are nodes. A node is slow when every link it sends, or every link
it receives, is below the threshold (a NIC can degrade in one
direction) while a link between two other nodes passes. Its failing links are then reported as
explained by the node (verdict "node"), not as N-1 separate bad links. Judging nodes needs
>= 3 nodes (with two there is one pair and no way to tell which end is slow).

Inside a node the endpoints are ranks (GPUs), judged within each link type, and also against
the nominal bandwidth of their type where it is known (verdict "below-link-type" under
``expected_fraction`` of it). A GPU judged slow the same way as a node (all it sends or all it
receives fails while a pair of its node without it passes: a GPU on a PCIe fallback, a bad
xGMI/NVLink port) is reported as the GPU: its failing links carry verdict "gpu" and its node
record lists it in ``slow_ranks``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from collscope.records.links import LinkRecord, LinkVerdict, NodeRecord
from collscope.stats.summary import robust_sigma

FAIL_VERDICTS = ("slow", "node", "gpu", "below-link-type")


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
                f"{self.links} links between healthy "
                f"{'ranks' if self.scope.startswith('inside') else 'nodes'}; robust spread "
                "MAD x 1.4826 = "
                f"{self.mad_gbs:.3g} GB/s)")


def threshold(values: Sequence[float], fraction: float, scope: str) -> Threshold:
    reference = statistics.median(values)
    return Threshold(scope, reference, robust_sigma(values), fraction * reference, fraction,
                     len(values))


@dataclass
class NodeInfo:
    node: int
    host: str
    ranks: list[int]
    nics: list[str]


def _healthy_threshold(links: list[LinkRecord], ends: Callable[[LinkRecord], tuple[int, int]],
                       fraction: float, scope: str) -> Threshold:
    """The threshold over the links among healthy endpoints (nodes, or ranks inside nodes):
    endpoints whose best link in their weaker direction is below ``fraction x`` the median of
    those are set aside first, so one slow endpoint touching many links cannot drag the
    reference down."""
    sending = _best_by_end(links, lambda link: (ends(link)[0],))
    receiving = _best_by_end(links, lambda link: (ends(link)[1],))
    weaker = {end: min(sending.get(end, math.inf), receiving.get(end, math.inf))
              for end in sending.keys() | receiving.keys()}
    suspects: set[int] = set()
    if len(weaker) >= 3:
        first = fraction * statistics.median(weaker.values())
        suspects = {end for end, gbs in weaker.items() if gbs < first}
    healthy = [link.gbs for link in links if not suspects & set(ends(link))]
    return threshold(healthy or [link.gbs for link in links], fraction, scope)


def _best_by_end(links: Sequence[LinkRecord], ends: Callable[[LinkRecord], tuple[int, ...]],
                 ) -> dict[int, float]:
    best: dict[int, float] = {}
    for link in links:
        for end in ends(link):
            best[end] = max(best.get(end, 0.0), link.gbs)
    return best


def _node_ends(link: LinkRecord) -> tuple[int, int]:
    return link.src_node, link.dst_node


def _rank_ends(link: LinkRecord) -> tuple[int, int]:
    return link.src_rank, link.dst_rank


def slow_ends(links: Sequence[LinkRecord], ends: Callable[[LinkRecord], tuple[int, int]],
              ) -> set[int]:
    """Endpoints all of whose outgoing links, or all of whose incoming links, fail while some
    link between two other endpoints passes: the endpoint explains those links (a NIC or GPU
    slow in one direction counts). Linear in the number of links."""
    out: dict[int, list[int]] = {}          # end -> [links, failing]
    inc: dict[int, list[int]] = {}
    ok_total = 0
    ok_touching: dict[int, int] = {}
    for link in links:
        src, dst = ends(link)
        bad = link.verdict != "ok"
        for table, end in ((out, src), (inc, dst)):
            counts = table.setdefault(end, [0, 0])
            counts[0] += 1
            counts[1] += bad
        if not bad:
            ok_total += 1
            for end in {src, dst}:
                ok_touching[end] = ok_touching.get(end, 0) + 1
    slow = set()
    for end in out.keys() | inc.keys():
        one_way = any(table.get(end, [0, 0])[0] and table[end][0] == table[end][1]
                      for table in (out, inc))
        if one_way and ok_total - ok_touching.get(end, 0) > 0:
            slow.add(end)
    return slow


def _explained(links: Sequence[LinkRecord], slow: set[int],
               ends: Callable[[LinkRecord], tuple[int, int]], verdict: LinkVerdict) -> None:
    for link in links:
        if link.verdict != "ok" and slow & set(ends(link)):
            link.verdict = verdict


def scope_name(link: LinkRecord) -> str:
    """The threshold scope a link is judged in: across nodes, or inside nodes per link type."""
    return "across nodes" if link.scope == "inter" else \
        f"inside nodes ({link.link_type or 'unknown'})"


def link_limit(link: LinkRecord, thresholds: Sequence[Threshold],
               expected_fraction: float = 0.5) -> float:
    """The GB/s below which ``judge`` fails this link: its scope's threshold, or the share of
    its link type's nominal bandwidth where that is higher."""
    limit = next(t.limit_gbs for t in thresholds if t.scope == scope_name(link))
    if link.expected_gbs:
        limit = max(limit, expected_fraction * link.expected_gbs)
    return limit


def judge(links: list[LinkRecord], nodes: Sequence[NodeInfo], fraction: float = 0.7,
          expected_fraction: float = 0.5, fixed: Sequence[Threshold] = (),
          ) -> tuple[list[NodeRecord], list[Threshold]]:
    """Set every link's verdict; the node records and the thresholds used. ``fixed``
    thresholds (by scope) are used as given instead of being taken from these links: a
    confirmation judges re-measured links against the first measurement's threshold."""
    given = {limit.scope: limit for limit in fixed}
    thresholds = []
    inter = [link for link in links if link.scope == "inter"]
    best = _best_by_end(inter, _node_ends)
    slow_nodes: set[int] = set()
    if inter:
        scope = scope_name(inter[0])
        limit = given.get(scope) or _healthy_threshold(inter, _node_ends, fraction, scope)
        thresholds.append(limit)
        for link in inter:
            link.verdict = "ok" if link.gbs >= limit.limit_gbs else "slow"
        slow_nodes = slow_ends(inter, _node_ends)
        _explained(inter, slow_nodes, _node_ends, "node")
    intra = [link for link in links if link.scope == "intra"]
    for scope in sorted({scope_name(link) for link in intra}):
        group = [link for link in intra if scope_name(link) == scope]
        limit = given.get(scope) or _healthy_threshold(group, _rank_ends, fraction, scope)
        thresholds.append(limit)
        for link in group:
            if link.expected_gbs and link.gbs < expected_fraction * link.expected_gbs:
                link.verdict = "below-link-type"
            elif link.gbs < limit.limit_gbs:
                link.verdict = "slow"
            else:
                link.verdict = "ok"
    gpus: set[int] = set()
    for info in nodes:
        own = [link for link in intra if link.src_node == info.node]
        gpus |= slow_ends(own, _rank_ends)
    _explained(intra, gpus, _rank_ends, "gpu")
    records = []
    for info in nodes:
        own = [link for link in inter if info.node in _node_ends(link)]
        records.append(NodeRecord(
            host=info.host, node=info.node, ranks=info.ranks, nics=info.nics,
            median_gbs=statistics.median(link.gbs for link in own) if own else None,
            best_gbs=best.get(info.node), links=len(own),
            verdict="slow" if info.node in slow_nodes else "ok",
            slow_ranks=sorted(gpus & set(info.ranks))))
    return records, thresholds


def failed(links: Sequence[LinkRecord], nodes: Sequence[NodeRecord]) -> bool:
    """The acceptance gate: any failing link or node."""
    return any(link.verdict in FAIL_VERDICTS for link in links) or \
        any(node.verdict == "slow" or node.slow_ranks for node in nodes)
