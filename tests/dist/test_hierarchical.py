"""Hierarchical all-reduce on real gloo ranks: equal to the flat one, as a hook and in bench."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO, cli_env, free_port, read_records, run_cli

pytestmark = pytest.mark.dist
SCRIPT = REPO / "tests" / "dist" / "scripts" / "hierarchical_equals_flat.py"



# 2 nodes x 2, and 3 x 2: an odd node count, where the inter-node ring is not a pair exchange.
@pytest.mark.parametrize("world, ranks_per_node", [(4, 2), (6, 2)])
def test_hierarchical_equals_flat_and_ddp_hook_matches_plain_ddp(world, ranks_per_node,
                                                                 tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(world),
         "--master-port", str(free_port()), str(SCRIPT), str(ranks_per_node),
         str(tmp_path)],
        capture_output=True, text=True, timeout=240, env=cli_env(), cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    reports = [json.loads(path.read_text()) for path in tmp_path.glob("rank*.json")]
    assert sorted(r["rank"] for r in reports) == list(range(world))
    for report in reports:
        assert report["checked"] == 48            # 4 sizes x sum/avg x 2 dtypes x 3 chunks
        assert report["ddp_max_diff"] < 1e-5      # same parameters as plain DDP
        assert report["ddp_moved"] > 1e-3         # and training did change them


def test_bench_hierarchical_verifies_on_two_emulated_nodes(tmp_path):
    out = tmp_path / "hier.jsonl"
    # 4 KiB chunks: the larger sizes go through the pipeline (64 KiB: 16 chunks).
    proc = run_cli("bench", "--algo", "hierarchical", "--ranks-per-node", "2", "--nproc", "4",
                   "--hier-chunk", "4K", "-b", "4", "-e", "64K", "-f", "16", "-n", "2", "-w",
                   "1", "--op", "sum,avg", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    run, *results = read_records(out)
    assert "hierarchical all_reduce in 4 KiB chunks" in run["timing"]
    assert results and all(r["algo"] == "hierarchical" and r["wrong"] == 0 for r in results)
    assert {r["op"] for r in results} == {"sum", "avg"}


def test_ranks_per_node_must_divide_the_world():
    proc = run_cli("bench", "--algo", "hierarchical", "--ranks-per-node", "3", "--nproc", "4")
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("collscope bench: --ranks-per-node: 3 does not divide the "
                                   "world size 4; use a divisor of it")
