"""The real-jobs part of benchmarks/watch_detection.py (``--real``): plain 4-rank gloo jobs on
this machine under `collscope watch --interval 0.5 --json`, each with a planted shape, and
the verdicts the streams are scored on, checked end to end.

The jobs are tests/dist/scripts/watch_layouts.py (no collscope in them; it imports torch once
and forks its ranks): DDP with rank 2 30 ms late from the first step, the same from step 40
(an onset), a 2 x 2 TP x DP layout (``new_group``) with rank 1 30 ms late from the start,
FSDP2 (``fully_shard``) with rank 2 40 ms late once per step, and each layout healthy. They
run side by side. Per job: the ranks named (the ``finding`` records that started), the step
on which the first was named (rank 0's step lines) and its onset step, the share of the
later windows in which the planted rank was flagged, and whether the verdict holds: the
planted rank named within 20 steps of its onset, nobody else named (followers are named in
its finding, not as stragglers), and flagged in >= 80 % of the later windows; a healthy job
names nobody. tests/dist/test_watch_layouts.py and test_watch.py assert the same verdicts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tests" / "dist" / "scripts" / "watch_layouts.py"
JOB_TIMEOUT_S = 300
WITHIN_STEPS = 20
FLAGGED_SHARE = 0.8


@dataclass(frozen=True)
class Job:
    name: str
    layout: str
    steps: int
    slow_rank: int | None = None
    slow_ms: int = 0
    slow_from: int = 0


JOBS = (Job("ddp, rank 2 +30 ms from step 0", "ddp", 50, 2, 30),
        Job("ddp, rank 2 +30 ms from step 40", "ddp", 90, 2, 30, 40),
        Job("tp x dp 2x2, rank 1 +30 ms from step 0", "tpdp", 50, 1, 30),
        Job("fsdp2, rank 2 +40 ms once per step", "fsdp", 30, 2, 40),
        Job("ddp healthy", "ddp", 50), Job("tp x dp 2x2 healthy", "tpdp", 40),
        Job("fsdp2 healthy", "fsdp", 25))


def _env(job: Job) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
           and not k.startswith(("SLURM_", "OMPI_", "PMI_", "COLLSCOPE_"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(FORK_RANKS="4", OMP_NUM_THREADS="1", LAYOUT=job.layout, STEPS=str(job.steps))
    if job.slow_rank is not None:
        env.update(SLOW_RANK=str(job.slow_rank), SLOW_MS=str(job.slow_ms),
                   SLOW_FROM=str(job.slow_from))
    return env


def read_jsonl(path: Path) -> list[dict]:
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def verdict(job: Job, records: list[dict], stdout: str, code: int | None) -> dict:
    """What watch said about one job, and whether it is the verdict the job was planted for."""
    steps = [(int(i), float(t)) for i, t in re.findall(r"^step (\d+) (\S+)$", stdout, re.M)]
    started = [r for r in records if r.get("kind") == "finding" and r.get("state") == "started"]
    named = [r.get("ranks") or [r.get("rank")] for r in started]
    row = {"kind": "detection_real_job", "job": job.name, "exit_code": code,
           "steps": len(steps), "named": named,
           "shapes": [r.get("shape") for r in started],
           "named_at_step": None, "flagged_share": None, "test": None}
    if job.slow_rank is None:
        row["ok"] = code == 0 and not named and len(steps) == job.steps
        return row
    first = next((r for r in started if job.slow_rank in (r.get("ranks") or [])), None)
    if first is not None:
        row["named_at_step"] = max((i for i, t in steps if t <= first["time"]), default=-1)
        row["test"] = first.get("test", "").split(";")[0]
        row["said"] = first.get("title")
        end = steps[-1][1] if steps else first["time"]
        later = [w for w in records if w.get("kind") == "watch_window"
                 and w.get("rank") == job.slow_rank and first["time"] < w["time"] <= end]
        row["flagged_share"] = round(sum(bool(w.get("straggler")) for w in later)
                                     / len(later), 3) if later else None
    row["ok"] = (code == 0 and named == [[job.slow_rank]] and row["named_at_step"] is not None
                 and row["named_at_step"] - job.slow_from <= WITHIN_STEPS
                 and (job.layout != "ddp" or (row["flagged_share"] or 0) >= FLAGGED_SHARE))
    return row


def run_real() -> list[dict]:
    """Every job side by side under `collscope watch`; one verdict row each."""
    with tempfile.TemporaryDirectory(prefix="collscope-watch-real-") as name:
        folder = Path(name)
        running = []
        for index, job in enumerate(JOBS):
            out = (folder / f"{index}.out").open("wb")
            process = subprocess.Popen(
                [sys.executable, "-m", "collscope", "watch", "--interval", "0.5", "--json",
                 f"{index}.jsonl", "--", sys.executable, str(SCRIPT)],
                stdout=out, stderr=subprocess.DEVNULL, cwd=folder, env=_env(job))
            running.append((index, job, process, out))
        end = time.monotonic() + JOB_TIMEOUT_S
        rows = []
        for index, job, process, out in running:
            try:
                code: int | None = process.wait(timeout=max(1.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                code = None
            out.close()
            path = folder / f"{index}.jsonl"
            records = read_jsonl(path) if path.exists() else []
            rows.append(verdict(job, records, (folder / f"{index}.out").read_text(), code))
        return rows


def print_rows(rows: list[dict]) -> None:
    print(f"{'real gloo job (4 ranks)':<40} {'named':<10} {'at step':>7} {'flagged':>7} "
          f"{'verdict':>7}")
    for row in rows:
        named = ", ".join("+".join(map(str, ranks)) for ranks in row["named"]) or "nobody"
        print(f"{row['job']:<40} {named:<10} {_or_dash(row['named_at_step']):>7} "
              f"{_or_dash(row['flagged_share']):>7} {'ok' if row['ok'] else 'WRONG':>7}")


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)
