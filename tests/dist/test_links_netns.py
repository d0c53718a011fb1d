"""collscope links on an emulated 4-node cluster: one node capped at a quarter of the others'
rate is named as the slow node (and no other), exit 1; equal rates pass, exit 0.

Every node's link is capped (tbf, burst 256 kB < the 2 MiB message), so the exchanges are
bandwidth-bound: an uncapped veth measures the host's memory copies under CPU contention, not
a link. Needs root and network namespaces; skips cleanly elsewhere.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.helpers import REPO, free_port, read_records

pytestmark = pytest.mark.dist

FAST, SLOW = "400mbit", "100mbit"


def _links(tmp_path, slow_node: int | None):
    netns = pytest.importorskip("benchmarks.netns_cluster")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    out = tmp_path / "links.jsonl"
    started = time.monotonic()
    try:
        with netns.netns_cluster(nodes=4, prefix="cs13", subnet=130,
                                 link_rate=lambda node, _net: SLOW if node == slow_node
                                 else FAST) as cluster:
            env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
                   "PYTHONPATH": str(REPO)}
            agents = cluster.torchrun(1, free_port(), [
                "collscope", "links", "-b", "2M", "-n", "3", "-w", "1", "--json", str(out),
                "--timeout", "40"], timeout=55, env=env)
    except netns.ClusterUnavailable as error:
        pytest.skip(str(error))
    return agents, read_records(out), time.monotonic() - started


def test_a_node_at_a_quarter_rate_is_the_one_slow_node(tmp_path):
    agents, records, seconds = _links(tmp_path, slow_node=2)
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


def test_equal_rates_pass(tmp_path):
    agents, records, _seconds = _links(tmp_path, slow_node=None)
    assert [a.returncode for a in agents] == [0, 0, 0, 0], agents[0].stderr[-2000:]
    assert all(r["verdict"] == "ok" for r in records if r["kind"] in ("link", "node"))
    assert "verdict: PASS" in agents[0].stdout
