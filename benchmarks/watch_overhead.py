"""Watch overhead: the same DDP job's step time with and without `collscope watch`.

Method: benchmarks/watch_job.py (4 gloo ranks under torchrun, a 512-1024-512 MLP, batch 64,
real compute and DDP's all_reduce per step, no sleeps) runs PAIRS times plain and PAIRS times
under `collscope watch --interval I`, interleaved in one run (plain, watched, watched, plain,
...: the order alternates so a drift in the host's load falls on both alike). Each job's
figures: the median of rank 0's per-step wall times (after 20 warm-up steps), and the CPU
time per step of each rank's process (time.process_time over those steps: every thread,
the agent's included), averaged over the 4 ranks. Each pair's overhead = watched / plain - 1,
for both; the results are the medians over pairs, with each pair shown. Target: <= 1 % on
the wall-time median. On a host shared with other work the wall time of separate jobs
scatters by tens of percent; the CPU time per step is what the agent adds to each rank and
barely depends on the host's load, so it is printed beside it.

Run (about 2-4 minutes on 2 shared cores; measure under the shared lock):

    flock /tmp/collscope-measure.lock .venv/bin/python benchmarks/watch_overhead.py \\
        [--pairs 4] [--steps 150] [--interval 1]
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
JOB = str(REPO / "benchmarks" / "watch_job.py")


def job_figures(watched: bool, steps: int, interval: float, folder: Path,
                index: int) -> tuple[float, float]:
    """(median step wall time of rank 0, mean over ranks of CPU seconds per step)."""
    times = folder / f"steps{index}.json"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", "4", JOB]
    if watched:
        command = [sys.executable, "-m", "collscope", "watch", "--interval", str(interval),
                   "--json", str(folder / f"watch{index}.jsonl"), "--", *command]
    env = dict(os.environ, STEPS=str(steps), STEP_TIMES=str(times),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(command, env=env, timeout=600, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, cwd=folder)
    if done.returncode != 0:
        raise SystemExit(f"job {index} ({'watched' if watched else 'plain'}) failed with exit "
                         f"code {done.returncode}:\n{done.stderr[-3000:]}")
    found = json.loads(times.read_text())
    return statistics.median(found["wall_s"]), statistics.mean(found["cpu_s_per_step"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    rows: list[tuple[float, float]] = []
    print("| pair | plain step ms | watched step ms | wall | plain CPU ms/step | "
          "watched CPU ms/step | CPU |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            got = {w: job_figures(w, args.steps, args.interval, Path(tmp), 2 * pair + i)
                   for i, w in enumerate(order)}
            (wall0, cpu0), (wall1, cpu1) = got[False], got[True]
            rows.append((wall1 / wall0 - 1, cpu1 / cpu0 - 1))
            print(f"| {pair} | {wall0 * 1e3:.2f} | {wall1 * 1e3:.2f} | {rows[-1][0] * 100:+.2f} % "
                  f"| {cpu0 * 1e3:.3f} | {cpu1 * 1e3:.3f} | {rows[-1][1] * 100:+.2f} % |",
                  flush=True)
    wall = statistics.median(r[0] for r in rows)
    cpu = statistics.median(r[1] for r in rows)
    print(f"median over {len(rows)} pairs: step wall time {wall * 100:+.2f} % (target <= 1 %), "
          f"CPU per step {cpu * 100:+.2f} %; 4 gloo ranks, --interval {args.interval:g}, "
          f"{args.steps} timed steps per job")


if __name__ == "__main__":
    main()
