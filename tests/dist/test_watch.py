"""`collscope watch` around real jobs: a plain DDP script under torchrun on 4 gloo ranks. Two
batches of jobs run side by side (module-scoped, so every assertion shares them): a planted
30 ms straggler (with /metrics scraped mid-run), a healthy run twice, a stalled rank with
--on-hang kill, and the same command without watch for the exit code. What judges no time
(srun-style ranks, a script without a process group) is test_watch_wrapping.py's, in the
parallel pass."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dist.watch_jobs import DDP, JOB_TIMEOUT_S, Job, start, watch
from tests.helpers import cli_env, free_port, read_records

pytestmark = [pytest.mark.dist, pytest.mark.serial]   # judges lateness in ms

ALL_REDUCES = (r'collscope_watch_collectives_total\{{rank="{rank}",host="[^"]+",group="0",'
               r'collective="all_reduce"\}} [1-9]\d*')


def torchrun(ranks: int, script: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
            "--master-port", str(free_port()), script]


def scrape_until_every_rank(job: Job, ranks: int) -> str:
    """/metrics of a running watch, once it holds every rank's lateness series."""
    deadline = time.monotonic() + JOB_TIMEOUT_S
    url = None
    while time.monotonic() < deadline and job.process.poll() is None:
        if url is None:
            found = re.search(r"metrics at (http://\S+)", job.stderr)
            url = found.group(1) if found else None
        if url is not None:
            body = urllib.request.urlopen(url, timeout=5).read().decode()
            if all(re.search(ALL_REDUCES.format(rank=r), body) for r in range(ranks)):
                return body
        time.sleep(0.3)
    raise AssertionError(f"no per-rank series before the job ended: {job.stderr[-2000:]}")


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    """A folder of our own, not under pytest's basetemp: pytest sessions of other checkouts
    on the same machine remove all but their 3 newest basetemps, ours too, mid-run."""
    with tempfile.TemporaryDirectory(prefix="collscope-watch-test-") as name:
        yield Path(name)


@pytest.fixture(scope="module")
def first(folder):
    """A straggler job (exit code 7 in every worker), a healthy one, the plain command."""
    jobs = {
        "straggler": start(folder, "straggler", watch(
            "--interval", "0.5", "--json", "straggler.jsonl", "--prometheus", "127.0.0.1:0")
            + torchrun(4, DDP), SLOW_RANK="2", SLOW_FROM="40", EXIT_CODE="7"),
        "healthy": start(folder, "healthy", watch("--interval", "0.5", "--json",
                                                  "healthy.jsonl") + torchrun(4, DDP)),
        "plain": start(folder, "plain", torchrun(4, DDP), STEPS="3", EXIT_CODE="7"),
    }
    metrics = scrape_until_every_rank(jobs["straggler"], 4)
    return {name: job.wait() for name, job in jobs.items()}, metrics


@pytest.fixture(scope="module")
def second(folder, first):
    """A stalled rank (--on-hang kill), the same on 2 ranks with the Flight Recorder off, and
    the healthy job again."""
    jobs = {
        "stall": start(folder, "stall", watch(
            "--interval", "0.5", "--hang-after", "6", "--on-hang", "kill", "--dump-dir",
            "dumps", "--json", "stall.jsonl") + torchrun(4, DDP), STALL_RANK="2",
            STALL_AT="30", STEPS="200"),
        "healthy2": start(folder, "healthy2", watch("--interval", "0.5", "--json",
                                                    "healthy2.jsonl") + torchrun(4, DDP)),
        # no ring to read (the user's buffer of 0; gloo before torch 2.8 is the same case):
        # the main-thread watch
        "noring": start(folder, "noring", watch(
            "--interval", "0.5", "--hang-after", "6", "--on-hang", "kill", "--dump-dir",
            "dumps-noring", "--json", "noring.jsonl") + torchrun(2, DDP), STALL_RANK="1",
            STALL_AT="10", STEPS="200", TORCH_FR_BUFFER_SIZE="0"),
    }
    return {name: job.wait() for name, job in jobs.items()}


def findings(path: Path) -> list[dict]:
    return [r for r in read_records(path) if r["kind"] == "finding"]


def test_a_rank_30_ms_late_from_step_40_is_named_with_its_host_within_20_steps(first, folder):
    jobs, _ = first
    job = jobs["straggler"]
    started = [f for f in findings(folder / "straggler.jsonl") if f["state"] == "started"]
    assert [(f["rank"], f["host"], f["id"]) for f in started] == \
        [(2, socket.gethostname(), "watch.straggler")], job.stderr[-3000:]
    steps = [(int(i), float(t)) for i, t in re.findall(r"^step (\d+) (\S+)$", job.stdout,
                                                       re.M)]
    at = max(i for i, t in steps if t <= started[0]["time"])
    assert at <= 40 + 20, f"named at step {at}"
    assert 25 < started[0]["lateness_ms"] < 60 and started[0]["p_last"] < 1e-3
    assert started[0]["shape"] in ("onset", "persistent", "intermittent")
    assert re.search(r"straggler \(\w+\): rank 2", job.stderr)


def test_a_healthy_job_names_nobody_in_repeated_runs(first, second, folder):
    for name, jobs in (("healthy", first[0]), ("healthy2", second)):
        assert jobs[name].returncode == 0, jobs[name].stderr[-3000:]
        records = read_records(folder / f"{name}.jsonl")
        assert records[0]["kind"] == "run" and records[0]["command"] == "watch"
        assert findings(folder / f"{name}.jsonl") == []
        assert sum(r["kind"] == "watch_window" for r in records) > 20


def test_exit_codes_are_the_commands_own(first):
    jobs, _ = first
    # torchrun turns a worker's 7 into its own 1; watch returns what torchrun returned.
    assert jobs["plain"].returncode == 1 and jobs["straggler"].returncode == 1


def test_metrics_scraped_mid_run_hold_per_rank_series(first, folder):
    _, metrics = first
    for rank in range(4):
        assert re.search(ALL_REDUCES.format(rank=rank), metrics)
        assert f'collscope_watch_lateness_seconds{{rank="{rank}"' in metrics
        assert f'collscope_watch_oldest_pending_seconds{{rank="{rank}"' in metrics
    # gloo records no durations: no busbw anywhere, never a 0 in its place.
    assert "collscope_watch_busbw_gbps" not in metrics
    windows = [r for r in read_records(folder / "straggler.jsonl")
               if r["kind"] == "watch_window"]
    assert windows and all(w["busbw_gbs"] is None and w["algbw_gbs"] is None for w in windows)
    said = [line for line in first[0]["straggler"].stderr.splitlines()
            if line.startswith("collscope watch:") and "busbw" in line]
    assert said == []
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (the series were checked without it)")
    check = subprocess.run([promtool, "check", "metrics"], input=metrics, text=True,
                           capture_output=True, timeout=30)
    assert check.returncode == 0 and check.stdout + check.stderr == "", check.stdout


def test_a_stalled_rank_ends_the_job_with_dumps_and_a_verdict(second, folder):
    job = second["stall"]
    assert job.returncode == 124, job.stderr[-3000:]
    line = next(n for n, text in enumerate(Path(DDP).read_text().splitlines(), 1)
                if "STALL-LINE" in text)
    stalled = float(re.search(r"^step 29 (\S+)$", job.stdout, re.M).group(1))
    assert job.ended - stalled < 30
    dumps = folder / "dumps"
    assert (folder / "stall.jsonl").exists(), job.stderr[-3000:]
    assert sorted(p.name for p in dumps.iterdir()) == sorted(
        [f"fr_trace_rank_{r}" for r in range(4)] + [f"stack_rank_{r}.json" for r in range(4)])
    stack = json.loads((dumps / "stack_rank_2.json").read_text())
    assert stack["kind"] == "main_thread_stack" and stack["rank"] == 2
    assert (stack["frames"][-1]["filename"], stack["frames"][-1]["line"]) == (DDP, line)
    records = read_records(folder / "stall.jsonl")
    (stall,) = [r for r in records if r["kind"] == "watch_stall"]
    assert stall["answered"] == [0, 1, 2, 3] and stall["no_answer"] == []
    assert stall["detected_by"] != 2 and stall["pending_s"] >= 6
    # collscope hang's verdict, printed and recorded: rank 2, where its main thread sleeps.
    (verdict,) = [r for r in records if r["kind"] == "hang_verdict"]
    assert verdict["culprit_ranks"] == [2] and verdict["cause"] == "not_entered"
    assert f"watch_ddp.py:{line}" in verdict["headline"]
    assert verdict["headline"] in job.stderr
    # `collscope hang` on the same dumps gives the same verdict.
    again = subprocess.run([sys.executable, "-m", "collscope", "hang", str(dumps), "--json",
                            str(folder / "hang.jsonl")], capture_output=True, text=True,
                           env=cli_env(), cwd=folder, timeout=120)
    assert again.returncode == 1, again.stderr
    (same,) = [r for r in read_records(folder / "hang.jsonl") if r["kind"] == "hang_verdict"]
    keys = ("culprit_ranks", "waiting_ranks", "cause", "group", "collective", "seq")
    assert {k: same[k] for k in keys} == {k: verdict[k] for k in keys}


def test_without_a_ring_the_stalled_rank_is_named_from_the_stacks_once(second, folder):
    """TORCH_FR_BUFFER_SIZE=0: each agent watches its main thread; rank 0 (in DDP's backward)
    waits past --hang-after, the stacks name rank 1 at its sleep, and the job is ended."""
    job = second["noring"]
    assert job.returncode == 124, job.stderr[-3000:]
    lines = Path(DDP).read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "STALL-LINE" in text)
    backward = next(n for n, text in enumerate(lines, 1) if ".backward()" in text)
    assert job.stderr.count("no Flight Recorder for this job: TORCH_FR_BUFFER_SIZE=0 keeps "
                            "no entries") == 1
    assert "agent switched off" not in job.stderr
    assert sorted(p.name for p in (folder / "dumps-noring").iterdir()) == \
        ["stack_rank_0.json", "stack_rank_1.json"]
    records = read_records(folder / "noring.jsonl")
    (stall,) = [r for r in records if r["kind"] == "watch_stall"]
    assert (stall["detected_by"], stall["collective"], stall["seq"]) == (0, "backward", -1)
    (verdict,) = [r for r in records if r["kind"] == "watch_stack_verdict"]
    assert verdict["culprit_ranks"] == [1] and verdict["waiting"] == {
        f"backward at {DDP}:{backward} in <module>": [0]}
    assert verdict["elsewhere"] == {"1": f"{DDP}:{line} in <module>"}
    assert verdict["title"] in job.stderr
