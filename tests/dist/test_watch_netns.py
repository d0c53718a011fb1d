"""`collscope watch` on two emulated nodes (network namespaces, each its own host name): one
watch per node wraps that node's torchrun agent; a rank on node 1 made 30 ms late from step
40 is named with node 1's host name, in the JSON of the node that runs rank 0, and the two
hosts' clocks were aligned through the job's store (one kernel clock here: offset ~0).
Needs root and network namespaces; skips cleanly elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import REPO, free_port, read_records

pytestmark = [pytest.mark.dist, pytest.mark.serial]   # judges lateness across emulated nodes

DDP = str(REPO / "tests" / "dist" / "scripts" / "watch_ddp.py")


def test_a_slow_rank_on_node_1_is_named_with_its_host_name(tmp_path):
    netns = pytest.importorskip("benchmarks.netns_cluster")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    port = str(free_port())
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "PYTHONPATH": str(REPO), "SLOW_RANK": "3", "SLOW_FROM": "40"}
    try:
        with netns.netns_cluster(nodes=2, rate=None, prefix="wa", subnet=30) as cluster:
            agents = []
            for node in range(2):
                argv = [sys.executable, "-m", "collscope", "watch", "--interval", "0.5",
                        "--json", str(tmp_path / f"node{node}.jsonl"), "--",
                        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
                        "--node-rank", str(node), "--nproc-per-node", "2", "--master-addr",
                        cluster.address(0), "--master-port", port, DDP]
                with (tmp_path / f"node{node}.err").open("wb") as err:
                    agents.append(subprocess.Popen(cluster.command(node, argv, env),
                                                   stdout=subprocess.DEVNULL, stderr=err,
                                                   cwd=tmp_path))
            try:
                codes = [agent.wait(timeout=150) for agent in agents]
            finally:
                netns.stop_agents(agents)
    except netns.ClusterUnavailable as error:
        pytest.skip(str(error))
    stderr = (tmp_path / "node0.err").read_text()
    assert codes == [0, 0], stderr[-3000:]
    records = read_records(tmp_path / "node0.jsonl")
    (job,) = [r for r in records if r["kind"] == "watch_job"]
    assert job["hosts"] == ["wa-node0", "wa-node1"]
    assert [r["host"] for r in job["ranks"]] == ["wa-node0"] * 2 + ["wa-node1"] * 2
    assert job["clock"]["applied"] and set(job["clock"]["offsets_us"]) == {"wa-node1"}
    # One kernel clock: the true offset is 0, so the estimate must lie within its own
    # uncertainty (the median half-gap of the store round trips; 8.8 ms once under CI load).
    offset, spread = job["clock"]["offsets_us"]["wa-node1"], job["clock"]["spread_us"]["wa-node1"]
    assert abs(offset) <= max(5000, 2 * spread), job["clock"]
    started = [r for r in records if r["kind"] == "finding" and r["state"] == "started"]
    assert [(f["rank"], f["host"]) for f in started] == [(3, "wa-node1")], stderr[-3000:]
    assert 25 < started[0]["lateness_ms"] < 60
    # The other node's wrapper passes its job through and names nothing itself; it keeps only
    # what its own ranks' agents cost.
    other = read_records(tmp_path / "node1.jsonl")
    assert [r["kind"] for r in other] == ["run", "watch_agent", "watch_agent"]
    assert sorted((r["rank"], r["host"]) for r in other[1:]) == [(2, "wa-node1"),
                                                                  (3, "wa-node1")]
