"""`collscope doctor --all-ranks` on real gloo ranks: a planted difference is found."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from tests.helpers import REPO, cli_env, run_cli

pytestmark = pytest.mark.dist


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_two_nodes_with_a_different_env_var(tmp_path):
    """Two torchrun agents (--nnodes 2) form a two-node job; only node 1 sets NCCL_IB_HCA."""
    port = _free_port()
    agents = []
    for node in range(2):
        env = cli_env(NCCL_IB_HCA="mlx5_0") if node == 1 else cli_env()
        env.pop("NCCL_IB_HCA", None) if node == 0 else None
        args = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
                "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "collscope-doctor-test",
                "-m", "collscope", "doctor", "--all-ranks", "--json", "--timeout", "60",
                "--collect", str(tmp_path / "node{node}.tar.gz")]
        agents.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, env=env, cwd=REPO))
    try:
        outputs = [agent.communicate(timeout=150) for agent in agents]
    finally:
        for agent in agents:
            agent.kill()
    # NCCL_IB_HCA on a node without RDMA is a warning, not a failure: both exit 0.
    assert [a.returncode for a in agents] == [0, 0], outputs
    report = next(json.loads(out) for out, _ in outputs if out.strip().startswith("{"))
    assert [n["node"] for n in report["nodes"]] == [0, 1]
    differing = [f for f in report["findings"] if f["id"] == "cluster.differences"]
    (ib,) = [f for f in differing if f["title"] == "NCCL_IB_HCA differs between ranks"]
    assert ib["level"] == "warn"
    assert "<unset>" in ib["detail"] and "mlx5_0" in ib["detail"]
    # node 1's own finding about its NCCL_IB_HCA is tagged with its node
    assert any(f["id"] == "env.ib-hca" and f["title"].endswith("[node 1]")
               for f in report["findings"])
    assert any(f["id"] == "selftest.allreduce" and f["level"] == "ok" and "2-rank" in f["title"]
               for f in report["findings"])
    assert sorted(p.name for p in tmp_path.glob("node*.tar.gz")) == ["node0.tar.gz",
                                                                    "node1.tar.gz"]


def test_local_ranks_form_one_node():
    proc = run_cli("doctor", "--all-ranks", "--nproc", "2", "--no-selftest", "--json",
                   timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [(n["node"], n["ranks"]) for n in report["nodes"]] == [(0, [0, 1])]
    (agree,) = [f for f in report["findings"] if f["id"] == "cluster.differences"]
    assert agree["level"] == "ok"


def test_spawned_selftest_path_runs_on_gloo():
    """The GPU self-test spawns 2 ranks running collscope.bench; its plumbing is the same on
    CPU (gloo), which is what this machine can check."""
    from collscope.doctor.selftest import run_gpu_ranks

    result, log = run_gpu_ranks(timeout_s=60)
    assert result.status == "ok", result.error
    assert result.world_size == 2 and result.wrong == 0 and result.time_us > 0
    assert log is None                              # gloo writes no NCCL log
