"""`collscope doctor --all-ranks` on real gloo ranks: a planted difference is found."""

from __future__ import annotations

import json

import pytest

from tests.helpers import cli_env, run_cli, two_torchrun_agents

pytestmark = pytest.mark.dist


def test_two_nodes_with_a_different_env_var(tmp_path):
    """Two torchrun agents (--nnodes 2) form a two-node job; only node 1 sets NCCL_IB_HCA."""
    node0, node1 = cli_env(), cli_env(NCCL_IB_HCA="mlx5_0")
    node0.pop("NCCL_IB_HCA", None)
    results = two_torchrun_agents(
        ["collscope", "doctor", "--all-ranks", "--json", "--timeout", "60",
         "--collect", str(tmp_path / "node{node}.tar.gz")], envs=[node0, node1])
    outputs = [(out, err) for _, out, err in results]
    # NCCL_IB_HCA on a node without RDMA is a warning, not a failure: both exit 0.
    assert [code for code, _, _ in results] == [0, 0], outputs
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
