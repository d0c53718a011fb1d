"""Under a launcher only the rank that writes an output checks it can, and a failed check ends
every rank with exit 2 and one line (no rank left waiting for a peer that gave up).

The two ranks are started as torchrun starts them (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_*),
each with its own arguments: on a real cluster a folder may exist on rank 0's host only.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, cli_env, free_port, read_records, run_cli

pytestmark = pytest.mark.dist
BENCH = ["bench", "-b", "1K", "-e", "1K", "-n", "2", "-w", "1", "--backend", "gloo",
         "--timeout", "20"]
MISSING = "/nonexistent-collscope/dir/out.jsonl"


def _two_ranks(per_rank_args: list[list[str]], nodes: int = 1) -> list[tuple[int, str]]:
    """Two ranks on one node, or (nodes=2) one rank on each of two nodes: each is then its
    node's local rank 0."""
    port = str(free_port())
    per_node = 2 // nodes
    ranks = [subprocess.Popen(
        [sys.executable, "-m", "collscope", *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=REPO,
        env=cli_env(RANK=str(rank), LOCAL_RANK=str(rank % per_node), WORLD_SIZE="2",
                    LOCAL_WORLD_SIZE=str(per_node), GROUP_RANK=str(rank // per_node),
                    MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
        for rank, args in enumerate(per_rank_args)]
    try:
        outputs = [rank.communicate(timeout=90) for rank in ranks]
    finally:
        for rank in ranks:
            rank.kill()
    return [(rank.returncode, err) for rank, (_out, err) in zip(ranks, outputs)]


@pytest.mark.serial   # bounds the wall time of an agreement
def test_unwritable_output_ends_every_rank_with_exit_2_and_one_line():
    started = time.monotonic()
    (code0, err0), (code1, err1) = _two_ranks([[*BENCH, "--json", MISSING]] * 2)
    assert (code0, code1) == (2, 2), err0 + err1
    (line,) = err0.strip().splitlines()
    assert line == (f"collscope bench: --json: cannot write '{MISSING}': folder "
                    "/nonexistent-collscope/dir does not exist")
    assert err1 == ""                      # rank 1 neither checked nor printed
    assert time.monotonic() - started < 20  # agreed at once, not at the timeout


def test_only_the_writing_rank_checks(tmp_path: Path):
    # The folder exists for rank 0 (which writes) and not for rank 1: the run goes on.
    out = tmp_path / "bench.jsonl"
    (code0, err0), (code1, err1) = _two_ranks([[*BENCH, "--json", str(out)],
                                               [*BENCH, "--json", MISSING]])
    assert (code0, code1) == (0, 0), err0 + err1
    assert [r["kind"] for r in read_records(out)][0] == "run"


TRAIN = ["train", "--hidden", "32", "--layers", "1", "--heads", "2", "--seq-len", "8",
         "--steps", "2", "--warmup", "2", "--backend", "gloo", "--timeout", "20"]
UNWRITABLE = "/proc/collscope-traces"


@pytest.mark.serial   # bounds the wall time of an agreement
def test_each_node_checks_the_trace_folder_its_ranks_write(tmp_path: Path):
    # Every rank writes its trace on its own node, so each node's local rank 0 checks the
    # folder: here it exists on node 0 only, and every rank exits 2 before training.
    started = time.monotonic()
    (code0, err0), (code1, err1) = _two_ranks(
        [[*TRAIN, "--json", str(tmp_path / "t.jsonl"), "--trace", str(tmp_path / "traces")],
         [*TRAIN, "--json", MISSING, "--trace", UNWRITABLE]], nodes=2)
    assert (code0, code1) == (2, 2), err0 + err1
    (line,) = err0.strip().splitlines()
    # Rank 1 writes no --json, so its missing --json folder is not a problem; its trace is.
    assert line.startswith(f"collscope train: --trace: cannot write into folder "
                           f"'{UNWRITABLE}'"), line
    assert err1 == ""
    assert not (tmp_path / "t.jsonl").exists()
    assert time.monotonic() - started < 30


def test_doctor_all_ranks_checks_collect_on_each_nodes_writer():
    args = ["doctor", "--all-ranks", "--no-selftest", "--timeout", "20",
            "--collect", "/nonexistent-collscope/b.tar.gz"]
    (code0, err0), (code1, err1) = _two_ranks([args, args])
    assert (code0, code1) == (2, 2), err0 + err1
    (line,) = err0.strip().splitlines()
    assert line == "collscope doctor: --collect: directory '/nonexistent-collscope' does not exist"
    assert err1 == ""


def test_doctor_ranks_that_do_not_write_do_not_check():
    # Without --all-ranks only each node's local rank 0 reports and writes --collect.
    env = cli_env(RANK="1", LOCAL_RANK="1", WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                  MASTER_ADDR="127.0.0.1", MASTER_PORT="29400")
    proc = run_cli("doctor", "--collect", "/nonexistent-collscope/b.tar.gz", env=env,
                   timeout=30)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
