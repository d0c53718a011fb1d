"""`collscope watch` verdicts on the straggler shapes real jobs have, on plain 4-rank gloo jobs
the tests write (tests/dist/scripts), started srun-style (each rank its own process under its
own `collscope watch`; rank 0's gets the records): DDP with a rank 30 ms late from the first
step, a 2 x 2 TP x DP layout (``new_group``) with a rank slow from the start, FSDP2
(``fully_shard``) with a rank 40 ms late once per step, and healthy TP x DP and FSDP2 runs,
twice each (the healthy DDP runs are test_watch.py's). One batch of jobs, run side by side;
every assertion shares it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO, cli_env, free_port, read_records

pytestmark = [pytest.mark.dist, pytest.mark.serial]   # judges lateness in ms

SCRIPTS = REPO / "tests" / "dist" / "scripts"
RANKS = 4
JOB_TIMEOUT_S = 150


class Job:
    """One job of RANKS srun-style ranks, each under its own `collscope watch`."""

    def __init__(self, folder: Path, name: str, script: str, **env: str) -> None:
        self.folder, self.name = folder, name
        port = str(free_port())
        self.processes = []
        for rank in range(RANKS):
            flags = ["--interval", "0.5"] + (["--json", f"{name}.jsonl"] if rank == 0 else [])
            with (folder / f"{name}{rank}.out").open("wb") as out, \
                    (folder / f"{name}{rank}.err").open("wb") as err:
                self.processes.append(subprocess.Popen(
                    [sys.executable, "-m", "collscope", "watch", *flags, "--", sys.executable,
                     str(SCRIPTS / script)], stdout=out, stderr=err, cwd=folder, env=cli_env(
                        RANK=str(rank), WORLD_SIZE=str(RANKS), MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=port, OMP_NUM_THREADS="1", **env)))

    def wait(self) -> Job:
        end = time.monotonic() + JOB_TIMEOUT_S
        for process in self.processes:
            try:
                process.wait(timeout=max(1.0, end - time.monotonic()))
            finally:
                if process.poll() is None:
                    process.kill()
        assert [p.returncode for p in self.processes] == [0] * RANKS, self.stderr[-3000:]
        return self

    @property
    def stderr(self) -> str:
        return (self.folder / f"{self.name}0.err").read_text()

    @property
    def steps(self) -> list[tuple[int, float]]:
        text = (self.folder / f"{self.name}0.out").read_text()
        return [(int(i), float(t)) for i, t in re.findall(r"^step (\d+) (\S+)$", text, re.M)]

    @property
    def records(self) -> list[dict]:
        return read_records(self.folder / f"{self.name}.jsonl")

    def started(self) -> list[dict]:
        return [r for r in self.records if r["kind"] == "finding" and r["state"] == "started"]


@pytest.fixture(scope="module")
def jobs() -> Iterator[dict[str, Job]]:
    """A folder of our own (other checkouts' pytest sessions prune basetemps mid-run)."""
    with tempfile.TemporaryDirectory(prefix="collscope-watch-layouts-") as name:
        folder = Path(name)
        started = {
            "ddp_slow": Job(folder, "ddp_slow", "watch_ddp.py", SLOW_RANK="2", SLOW_FROM="0",
                            STEPS="60"),
            "tpdp_slow": Job(folder, "tpdp_slow", "watch_layouts.py", LAYOUT="tpdp",
                             SLOW_RANK="1", SLOW_MS="30", STEPS="60"),
            "fsdp_slow": Job(folder, "fsdp_slow", "watch_layouts.py", LAYOUT="fsdp",
                             SLOW_RANK="2", SLOW_MS="40", STEPS="50"),
            **{f"{layout}_healthy{n}": Job(folder, f"{layout}_healthy{n}", "watch_layouts.py",
                                           LAYOUT=layout, STEPS="40")
               for layout in ("tpdp", "fsdp") for n in (1, 2)},
        }
        yield {name: job.wait() for name, job in started.items()}


def _step_at(job: Job, when: float) -> int:
    return max((i for i, t in job.steps if t <= when), default=-1)


def test_a_ddp_rank_late_from_the_first_step_is_named_and_stays_flagged(jobs):
    job = jobs["ddp_slow"]
    started = job.started()
    assert [(f["rank"], f["shape"]) for f in started] == [(2, "persistent")], job.stderr[-3000:]
    assert _step_at(job, started[0]["time"]) <= 20
    assert started[0]["cost_pct"] > 10 and started[0]["p_last"] < 1e-3
    later = [w for w in job.records if w["kind"] == "watch_window" and w["rank"] == 2
             and w["time"] > started[0]["time"] and w["time"] <= job.steps[-1][1]]
    assert later and sum(w["straggler"] for w in later) >= 0.8 * len(later)
    assert "straggler (persistent): rank 2" in job.stderr


def test_tp_dp_names_the_slow_rank_not_the_peers_that_wait_on_it(jobs):
    job = jobs["tpdp_slow"]
    started = job.started()
    assert [f["ranks"] for f in started] == [[1]], job.stderr[-3000:]
    finding = started[0]
    # its TP peer (rank 0) waits on it, then enters the DP collective late: a follower
    assert finding["followers"] == [0] and len(finding["groups"]) >= 2
    assert "2 of 2" in finding["layout"] or "of 2" in finding["layout"]


def test_fsdp2_rank_late_once_per_step_is_named(jobs):
    job = jobs["fsdp_slow"]
    assert [f["ranks"] for f in job.started()] == [[2]], job.stderr[-3000:]


def test_healthy_tp_dp_and_fsdp2_runs_name_nobody_repeatedly(jobs):
    for name in ("tpdp_healthy1", "tpdp_healthy2", "fsdp_healthy1", "fsdp_healthy2"):
        job = jobs[name]
        assert job.started() == [], (name, job.stderr[-3000:])
        assert sum(r["kind"] == "watch_window" for r in job.records) > 10, name
