"""`collscope watch` with the levelled exchange (``--aggregate hosts``, the default) on 8 gloo
ranks as two emulated hosts (network namespaces, each its own host name, one watch and one
torchrun agent per node): each host's first rank merges its host's summaries and rank 0 reads
one record per host. One job holds both faults the flat path names in tests/dist/test_watch.py:
rank 6 (host 1, not its leader) 30 ms late from step 20, then rank 5 (host 1) stopped at step
60; the straggler is named with its host name in the JSON of the node that runs rank 0, the
hang's culprit as there, every rank's dump collected through the leaders, and the two hosts'
clocks aligned through the job's store (one kernel clock here: offset ~0). The other node's
wrapper passes its job through and names nothing itself. (That the levelled exchange hands
rank 0's matcher the flat one's summaries is tests/unit/watch/test_levels.py.) Needs root and
network namespaces; skips cleanly elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import REPO, free_port, read_records

pytestmark = [pytest.mark.dist, pytest.mark.serial]   # judges lateness across emulated nodes

DDP = str(REPO / "tests" / "dist" / "scripts" / "watch_ddp.py")


def test_levelled_watch_names_the_straggler_and_the_hang_culprit_on_two_hosts(tmp_path):
    netns = pytest.importorskip("benchmarks.netns_cluster")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    port = str(free_port())
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "PYTHONPATH": str(REPO), "SLOW_RANK": "6", "SLOW_FROM": "20", "STALL_RANK": "5",
           "STALL_AT": "60", "STEPS": "400"}
    try:
        with netns.netns_cluster(nodes=2, rate=None, prefix="wl", subnet=34) as cluster:
            agents = []
            for node in range(2):
                argv = [sys.executable, "-m", "collscope", "watch", "--interval", "0.5",
                        "--hang-after", "6", "--on-hang", "kill", "--dump-dir", "dumps",
                        "--json", str(tmp_path / f"node{node}.jsonl"), "--",
                        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
                        "--node-rank", str(node), "--nproc-per-node", "4", "--master-addr",
                        cluster.address(0), "--master-port", port, DDP]
                with (tmp_path / f"node{node}.err").open("wb") as err:
                    agents.append(subprocess.Popen(cluster.command(node, argv, env),
                                                   stdout=subprocess.DEVNULL, stderr=err,
                                                   cwd=tmp_path))
            try:
                # node 1 gets no verdict: left alone it ends its part DUMP_DEADLINE_S + 15 s
                # after its dumps (watch/run.py); what is judged here is over by then
                codes = [agents[0].wait(timeout=180)]
            finally:
                netns.stop_agents(agents)
    except netns.ClusterUnavailable as error:
        pytest.skip(str(error))
    stderr = (tmp_path / "node0.err").read_text()
    assert codes[0] == 124, stderr[-3000:]
    records = read_records(tmp_path / "node0.jsonl")
    (job,) = [r for r in records if r["kind"] == "watch_job"]
    assert job["hosts"] == ["wl-node0", "wl-node1"]
    assert [r["host"] for r in job["ranks"]] == ["wl-node0"] * 4 + ["wl-node1"] * 4
    assert job["clock"]["applied"] and set(job["clock"]["offsets_us"]) == {"wl-node1"}
    # One kernel clock: the true offset is 0, so the estimate must lie within its own
    # uncertainty (the median half-gap of the store round trips; 8.8 ms once under CI load).
    offset, spread = job["clock"]["offsets_us"]["wl-node1"], job["clock"]["spread_us"]["wl-node1"]
    assert abs(offset) <= max(5000, 2 * spread), job["clock"]
    started = [r for r in records if r["kind"] == "finding" and r["state"] == "started"]
    assert [(f["rank"], f["host"]) for f in started] == [(6, "wl-node1")], stderr[-3000:]
    assert 25 < started[0]["lateness_ms"] < 60
    (stall,) = [r for r in records if r["kind"] == "watch_stall"]
    assert stall["answered"] == list(range(8)) and stall["no_answer"] == []
    (verdict,) = [r for r in records if r["kind"] == "hang_verdict"]
    assert verdict["culprit_ranks"] == [5] and verdict["cause"] == "not_entered"
    assert not [r for r in records if r["kind"] == "watch_notice"], stderr[-3000:]
    # the other node's wrapper keeps only what its own ranks' agents cost (those that ended
    # before it was stopped)
    other = read_records(tmp_path / "node1.jsonl")
    costs = {(r["rank"], r["host"]) for r in other if r["kind"] == "watch_agent"}
    assert costs <= {(rank, "wl-node1") for rank in range(4, 8)}, other
    assert not [r for r in other if r["kind"] in ("finding", "hang_verdict", "watch_job")]
