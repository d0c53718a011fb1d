"""Watch overhead: the same DDP job's step time with and without `collscope watch`.

Method: benchmarks/watch_job.py (4 gloo ranks under torchrun on all of this machine's CPUs,
each rank pinned to one CPU round robin, so every job has the same placement; a 512-1024-512
MLP, batch 64, real compute and DDP's all_reduce per step, no sleeps) runs PAIRS times plain
and PAIRS times under `collscope watch --interval I`, interleaved in one run: plain, watched,
watched, plain, ... (the order alternates, so a drift in the host's load falls on both alike).
Each job's figure is the median of rank 0's per-step wall times (after 20 warm-up steps); a
pair's overhead = watched / plain - 1. Printed: each pair; the median over pairs with its
distribution-free interval (order statistics, collscope.stats.median_ci; its coverage said,
>= 95 % where the pairs allow); and what the agents measured on themselves (watch_agent
records: CPU time on the agent thread after its setup, time.thread_time), summed over the
ranks as a share of the job's CPUs: the CPU the job lost to watch, whatever else the host
ran. Target: <= 1 % median wall-time overhead.

Run (about 5 minutes for 10 pairs on 2 cores; measure under the shared lock, on a quiet host):

    flock /tmp/collscope-measure.lock .venv/bin/python benchmarks/watch_overhead.py \\
        [--pairs 10] [--steps 200] [--interval 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
JOB = str(REPO / "benchmarks" / "watch_job.py")

from collscope.stats.intervals import median_ci  # noqa: E402


def run_job(watched: bool, steps: int, interval: float, folder: Path, name: str) -> float:
    """The median step wall time of rank 0."""
    times = folder / f"{name}.steps.json"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", "4", JOB]
    if watched:
        command = [sys.executable, "-m", "collscope", "watch", "--interval", str(interval),
                   "--json", str(folder / f"{name}.watch.jsonl"), "--", *command]
    env = dict(os.environ, STEPS=str(steps), STEP_TIMES=str(times), PIN_CPUS="1",
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for attempt in range(1, 4):
        done = subprocess.run(command, env=env, timeout=900, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, cwd=folder)
        if done.returncode == 0:
            return statistics.median(json.loads(times.read_text())["wall_s"])
        # gloo's teardown now and then aborts one rank of a plain job as it exits
        # ("terminate called without an active exception"): the job is run again, said here
        last = done.stderr.strip().splitlines()[-1:] or [""]
        print(f"(job {name} failed with exit code {done.returncode}, try {attempt} of 3: "
              f"{last[0][:160]})", file=sys.stderr, flush=True)
    raise SystemExit(f"job {name} failed 3 times:\n{done.stderr[-3000:]}")


def agent_cores(path: Path) -> float:
    """Cores the job's agents took while it ran: their steady CPU shares summed over ranks."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    costs = [r["cpu_share"] for r in records if r.get("kind") == "watch_agent"]
    if len(costs) != 4:
        raise SystemExit(f"{path}: {len(costs)} watch_agent records, expected one per rank")
    return sum(costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    cpus = len(os.sched_getaffinity(0))
    overheads, taken = [], []
    print(f"| pair | order | plain step ms | watched step ms | wall | agents' cores (of {cpus}) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            step = {w: run_job(w, args.steps, args.interval, folder,
                               f"{'watched' if w else 'plain'}{pair}") for w in order}
            overheads.append(step[True] / step[False] - 1)
            taken.append(agent_cores(folder / f"watched{pair}.watch.jsonl"))
            print(f"| {pair} | {'plain first' if pair % 2 == 0 else 'watched first'} | "
                  f"{step[False] * 1e3:.2f} | {step[True] * 1e3:.2f} | "
                  f"{overheads[-1] * 100:+.2f} % | {taken[-1]:.4f} |", flush=True)
    ci = median_ci(overheads)
    share = statistics.median(taken) / cpus
    print(f"median over {len(overheads)} pairs: step wall time {ci.median * 100:+.2f} % "
          f"({ci.confidence * 100:.0f} % interval {ci.low * 100:+.2f} .. {ci.high * 100:+.2f} "
          f"%; target <= 1 %); the agents took a median {share * 100:.2f} % of the job's "
          f"{cpus} CPU(s) (their own thread CPU time, setup left out); 4 gloo ranks, "
          f"--interval {args.interval:g}, {args.steps} timed steps per job")


if __name__ == "__main__":
    main()
