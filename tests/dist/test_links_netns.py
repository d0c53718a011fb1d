"""collscope links on an emulated 4-node cluster: one node capped at a quarter of the others'
rate is named as the slow node (and no other), exit 1; with no cap at all, exit 0.

In the capped case every node's link is capped (tbf, burst 256 kB < the 2 MiB message), so the
exchanges are bandwidth-bound and short. The uncapped case runs links with its defaults
(64 MiB, 5 iterations): veth links between namespaces then measure memory copies on 2 shared
cores, whose speed wanders (one pair in ten below 70% of the median in a single measurement
at 2 MiB); the confirmation re-run is what keeps such noise from being called a slow link.
Needs root and network namespaces; skips cleanly elsewhere.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from tests.helpers import REPO, free_port, read_records

pytestmark = [pytest.mark.dist, pytest.mark.serial]   # judges link bandwidth

FAST, SLOW = "400mbit", "100mbit"


def _links(tmp_path, slow_node: int | None, capped: bool = True,
           args: tuple[str, ...] = ("-b", "2M", "-n", "3", "-w", "1")):
    netns = pytest.importorskip("benchmarks.netns_cluster")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    out = tmp_path / "links.jsonl"
    started = time.monotonic()
    try:
        with netns.netns_cluster(nodes=4, prefix="cs13", subnet=130,
                                 link_rate=lambda node, _net: None if not capped else
                                 SLOW if node == slow_node else FAST) as cluster:
            env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
                   "PYTHONPATH": str(REPO)}
            agents = cluster.torchrun(1, free_port(), [
                "collscope", "links", *args, "--json", str(out), "--timeout", "40"],
                timeout=55, env=env)
    except netns.ClusterUnavailable as error:
        pytest.skip(str(error))
    return agents, read_records(out), time.monotonic() - started


def test_a_node_at_a_quarter_rate_is_the_one_slow_node(tmp_path):
    # Three confirmation tries and a 60% line: the healthy 400 Mbit links are bimodal (one
    # run: 0.048-0.053 and 0.027 GB/s, the slow mode at 72% of their median, on the default
    # 70% line), so a healthy direction once failed its first try and its one confirmation,
    # once (quiet host) its two, and once (a bare Python 3.12 clone) all three; the capped
    # node (0.007-0.017 GB/s, under 0.45 of the median) fails every try.
    agents, records, seconds = _links(tmp_path, slow_node=2,
                                      args=("-b", "2M", "-n", "3", "-w", "1", "--confirm", "3",
                                            "--fraction", "0.6"))
    assert seconds < 60
    assert [a.returncode for a in agents] == [1, 1, 1, 1], agents[0].stderr[-2000:]
    nodes = [r for r in records if r["kind"] == "node"]
    assert [n["host"] for n in nodes if n["verdict"] == "slow"] == ["cs13-node2"]
    links = [r for r in records if r["kind"] == "link"]
    assert len(links) == 12                               # 6 pairs x 2 directions
    for link in links:                                    # explained by the node, not N-1 links
        touches = "cs13-node2" in (link["src_host"], link["dst_host"])
        assert link["verdict"] == ("node" if touches else "ok"), link
    assert "SLOW NODE cs13-node2" in agents[0].stdout
    assert "cs13n2e0" in agents[0].stdout                 # its NIC is named
    # Confirmed: node 2's rounds (all 3) ran again and its links failed again.
    (summary,) = [r for r in records if r["kind"] == "links_summary"]
    assert summary["verdict"] == "fail" and summary["slow_nodes"] == ["cs13-node2"]
    confirmation, *later = summary["confirmations"]
    assert [c["failing_after"] for c in [confirmation, *later]][-1] == 6
    # Node 2's pairs re-measured at their deciding size (at most the first, 2 MiB); a round
    # where one passed below 2 MiB (tbf's 256 kB burst can carry a small message at line
    # rate) ran once more at 2 MiB, whose try counts instead.
    retries = [r for r in records if r["kind"] == "link_try" and r["attempt"] == 1
               and "cs13-node2" in (r["src_host"], r["dst_host"])]
    per_direction = Counter((r["src_rank"], r["dst_rank"]) for r in retries)
    again_full = {r["round"] for r in retries if per_direction[r["src_rank"], r["dst_rank"]] > 1}
    assert confirmation["attempt"] == 1 and confirmation["rounds"] == 3 + len(again_full)
    assert confirmation["failing_before"] >= 6 and confirmation["failing_after"] >= 6
    assert confirmation["sizes"] and max(confirmation["sizes"]) <= 2 << 20
    assert all(len(link["tries_gbs"]) == 4 for link in links if link["verdict"] == "node")
    # Decided early: against the fixed threshold, once 2 of a direction's 3 timed exchanges
    # lie on one side of it, the third cannot change the median's verdict, and node 2's
    # pairs stop there (a burst-carried small try may need all 3).
    from collscope.links.budget import decided

    (limit,) = summary["thresholds"]
    for r in retries:
        limit_us = r["size_bytes"] / (limit["limit_gbs"] * 1e9) * 1e6
        assert decided(r["times_us"], limit_us, 3) is not None, r
        assert r["stop"] == ("all" if len(r["times_us"]) == 3 else "decided"), r
    # ... and a try at 2 MiB decides early (every first retry can be a small, burst-carried
    # one that needs all 3: then a later confirmation's)
    later_tries = [r for r in records if r["kind"] == "link_try" and r["attempt"] >= 1
                   and "cs13-node2" in (r["src_host"], r["dst_host"])]
    assert any(len(r["times_us"]) == 2 for r in later_tries), later_tries


def test_with_no_cap_every_node_passes(tmp_path):
    # Defaults, but two confirmation tries and a 60% line: on 2 shared cores the uncapped
    # veth "links" are memory copies whose directions are bimodal (one mode ~2x the other:
    # 1.0 and 1.9 GB/s in one CI run), so the median sits between the modes and the slow mode
    # at 0.67-0.72 of it, on the default 70% line; one CI run had a healthy direction there in
    # its try and both confirmations (1.017, 1.028, 1.008 against 1.036 GB/s). A real cap (the
    # test above: a quarter of the rate) stays far below either line.
    agents, records, seconds = _links(tmp_path, slow_node=None, capped=False,
                                      args=("--confirm", "2", "--fraction", "0.6"))
    assert seconds < 60
    assert [a.returncode for a in agents] == [0, 0, 0, 0], agents[0].stderr[-2000:]
    assert all(r["verdict"] == "ok" for r in records if r["kind"] in ("link", "node"))
    assert "verdict: PASS" in agents[0].stdout
