"""`collscope hang` on Flight Recorder dumps that real gloo jobs write at test time: each fault
class planted through collscope/testing/faults.py in its own job (all jobs run at once, one
module-scoped run), dumped with _dump_fr_trace / _dump_fr_trace_json as dumpers write them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from collscope.hang import Cause, analyse_paths
from tests.helpers import REPO, cli_env, run_cli

pytestmark = pytest.mark.dist
SCRIPT = REPO / "tests" / "dist" / "scripts" / "fr_hang_job.py"
# Every job's ranks end on their own within seconds on a quiet machine; a loaded 2-core one
# (load 30) took 40 s for one 4-rank job.
DEADLINE_S = 300


@dataclass(frozen=True)
class Job:
    world: int
    layout: str
    name: str
    fmt: str
    fault: str


JOBS = {
    "skip": Job(4, "flat", "nccl_trace_rank_{rank}", "both", "fr-skip@2:3"),
    "op": Job(4, "flat", "nccl_trace_rank_{rank}", "pickle", "fr-op@3:3"),
    "size": Job(4, "flat", "nccl_trace_rank_{rank}", "pickle", "fr-size@1:3"),
    "dead": Job(4, "flat", "_dump_{rank}", "pickle", "fr-die@1:3"),
    "cascade": Job(8, "tp4", "job42_{host}_{rank}", "pickle", "fr-skip@5:3"),
    "healthy": Job(4, "flat", "nccl_trace_rank_{rank}", "pickle", ""),
}


def _dump_files(folder: Path, job: Job, rank: int) -> list[Path]:
    host = "node-01" if rank < job.world // 2 else "node-02"
    name = folder / job.name.format(rank=rank, host=host)
    return {"pickle": [name], "json": [name],
            "both": [name, name.with_name(name.name + ".json")]}[job.fmt]


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every job at once; a rank is done when it has written its dumps or has ended (died,
    aborted); then the ranks still alive (each blocked in its hang) are ended."""
    root = tmp_path_factory.mktemp("fr")
    ranks: list[tuple[subprocess.Popen[bytes], list[Path]]] = []
    folders = {}
    for key, job in JOBS.items():
        folder = root / key
        folder.mkdir()
        folders[key] = folder
        for rank in range(job.world):
            env = cli_env(RANK=str(rank), WORLD_SIZE=str(job.world), TORCH_FR_BUFFER_SIZE="200",
                          COLLSCOPE_FAULT_INJECT=job.fault)
            proc = subprocess.Popen(
                [sys.executable, str(SCRIPT), str(folder), job.layout, job.name, job.fmt],
                env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            ranks.append((proc, _dump_files(folder, job, rank)))
    deadline = time.monotonic() + DEADLINE_S
    try:
        while time.monotonic() < deadline and not all(
                proc.poll() is not None or all(p.exists() for p in files)
                for proc, files in ranks):
            time.sleep(0.2)
    finally:
        for proc, _ in ranks:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
    for folder in folders.values():
        (folder / ".store").unlink(missing_ok=True)
    return folders


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_skipped_collective_names_the_rank_that_never_entered(dumps):
    assert _files(dumps["skip"]) == sorted(f"nccl_trace_rank_{r}{suffix}" for r in range(4)
                                           for suffix in ("", ".json"))
    analysis = analyse_paths([dumps["skip"]])      # pickle and JSON of each rank: kept once
    assert len(analysis.dumps) == 4 and {d.fmt for d in analysis.dumps} == {"pickle"}
    verdict = analysis.verdict
    assert verdict.culprit_ranks == [2] and verdict.cause == Cause.NOT_ENTERED
    assert verdict.collective == "all_reduce" and verdict.waiting_ranks == [0, 1, 3]
    assert "Rank 2's last call there: broadcast" in verdict.headline


def test_json_dumps_read_like_pickles(dumps, tmp_path):
    for path in dumps["skip"].glob("*.json"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    analysis = analyse_paths([tmp_path])
    assert {d.fmt for d in analysis.dumps} == {"json"}
    assert analysis.verdict.culprit_ranks == [2] and analysis.verdict.cause == Cause.NOT_ENTERED


def test_op_mismatch_names_the_rank_that_called_another_collective(dumps):
    analysis = analyse_paths([dumps["op"]])
    present = {d.rank for d in analysis.dumps}
    verdict = analysis.verdict
    assert verdict.culprit_ranks == [3]
    # gloo may abort the odd rank when the messages do not fit: then it left no dump.
    assert verdict.cause == (Cause.OP_MISMATCH if 3 in present else Cause.DEAD)


def test_size_mismatch_names_the_rank_with_other_sizes(dumps):
    analysis = analyse_paths([dumps["size"]])
    verdict = analysis.verdict
    assert analysis.missing, "gloo aborts a rank on a size mismatch: its dump is missing"
    if 1 in {d.rank for d in analysis.dumps}:
        assert verdict.culprit_ranks == [1] and verdict.cause == Cause.SIZE_MISMATCH
        assert "[8192]" in verdict.headline and "[4096]" in verdict.headline
    else:
        assert verdict.culprit_ranks == [1] and verdict.cause == Cause.DEAD


def test_dead_rank_is_named_from_its_missing_dump(dumps):
    assert "_dump_1" not in _files(dumps["dead"])
    analysis = analyse_paths([dumps["dead"]])
    assert analysis.missing == {1: "no dump"}
    assert analysis.verdict.culprit_ranks == [1] and analysis.verdict.cause == Cause.DEAD


def test_cascade_root_is_the_one_tp_rank_and_hosts_come_from_the_names(dumps):
    analysis = analyse_paths([dumps["cascade"]])
    verdict = analysis.verdict
    assert verdict.culprit_ranks == [5] and verdict.cause == Cause.NOT_ENTERED
    assert verdict.hosts == {r: "node-01" if r < 4 else "node-02" for r in range(8)}
    assert verdict.headline.startswith("HANG: rank 5 (node-02) never entered all_reduce")
    assert "(ranks 4-7)" in verdict.headline
    # Its TP peers wait in TP, rank 1 in DP with it, ranks 0, 2, 3 in DP with ranks 4, 6, 7.
    assert verdict.waiting_ranks == [0, 1, 2, 3, 4, 6, 7]
    stuck = {tuple(f.channel.group.key.ranks): f for f in analysis.findings if f.stuck}
    assert stuck[(4, 5, 6, 7)].culprits == [5]
    assert stuck[(0, 4)].culprits == [4]      # a victim named in its own group, not at the root


def test_healthy_job_names_nobody_and_exits_0(dumps):
    assert len(_files(dumps["healthy"])) == 4
    assert analyse_paths([dumps["healthy"]]).verdict.culprit_ranks == []
    proc = run_cli("hang", str(dumps["healthy"]), timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("no hang"), proc.stdout


def test_cli_on_the_cascade_exits_1_with_the_verdict_first(dumps, tmp_path):
    proc = run_cli("hang", str(dumps["cascade"]), "--json", str(tmp_path / "h.jsonl"),
                   timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("HANG: rank 5 (node-02)")
    assert os.path.getsize(tmp_path / "h.jsonl") > 0
