"""The records of `collscope links`: ``link``, ``link_try``, ``node`` and ``links_summary``."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from collscope.records.base import Record

# ok | slow | node (a slow endpoint node explains it) | gpu (a slow GPU explains it) |
# below-link-type (under the nominal bandwidth of its link type)
LinkVerdict = Literal["ok", "slow", "node", "gpu", "below-link-type"]
NodeVerdict = Literal["ok", "slow"]           # slow: slow on all its links
GateVerdict = Literal["pass", "fail"]


class LinkRecord(Record, tag="link"):
    """One direction of one pair's exchange in `collscope links` (receiver-side timing)."""

    src_host: str
    dst_host: str
    src_rank: int
    dst_rank: int
    src_device: str | None        # "cuda:3", "cpu"
    dst_device: str | None
    src_nic: str | None           # the interface the rank was pinned to, when known
    dst_nic: str | None
    scope: str                    # "inter" (across nodes) or "intra" (inside a node)
    link_type: str | None         # intra-node GPU pairs: xgmi, nvlink, pcie, ... (topology)
    size_bytes: int
    iters: int
    time_us: float                # median over iterations of the receive completion time
    gbs: float                    # size_bytes / time_us, GB/s = 1e9 B/s (sendrecv busbw)
    expected_gbs: float | None    # nominal per-direction bandwidth of link_type, if known
    verdict: LinkVerdict = "ok"
    round: int = 0
    src_node: int = 0
    dst_node: int = 0
    tries_gbs: list[float] = []   # each try (re-measured: gbs = best)

    joins: ClassVar[str | None] = "links"


class LinkTryRecord(Record, tag="link_try"):
    """One measurement of one direction in `collscope links`, written as its round ends."""

    scope: str
    round: int
    attempt: int                  # 0: the first measurement; k: the k-th confirmation re-run
    src_rank: int
    dst_rank: int
    src_host: str
    dst_host: str
    size_bytes: int
    times_us: list[float]         # each timed iteration's receive completion time
    time_us: float                # their median
    gbs: float                    # size_bytes / time_us (1e9 B/s)
    stop: str = "all"             # all (-n iterations) | decided (early) | budget (--pair-budget)
    latency_us: float = 0.0       # the pair's small control exchange, least of this try's

    summed_in: ClassVar[str | None] = "link"


class LinksSummaryRecord(Record, tag="links_summary"):
    """The end of a `collscope links` run: thresholds, confirmations and the gate's verdict."""

    verdict: GateVerdict
    slow_nodes: list[str]
    thresholds: list[dict[str, Any]]
    confirmations: list[dict[str, Any]]
    rounds: dict[str, int]        # rounds per scope, confirmations included
    seconds: float
    round_seconds: list[float] = []   # each round run, in order

    joins: ClassVar[str | None] = "links"


class NodeRecord(Record, tag="node"):
    """One host in `collscope links`: its inter-node links summarised, and its verdict."""

    host: str
    node: int
    ranks: list[int]
    nics: list[str]
    median_gbs: float | None      # median over its inter-node links (None on one node)
    best_gbs: float | None        # its fastest inter-node link
    links: int
    verdict: NodeVerdict = "ok"
    slow_ranks: list[int] = []   # GPUs slow on all pairs (verdict gpu)

    joins: ClassVar[str | None] = "links"
