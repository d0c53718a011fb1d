"""Watch overhead: the same DDP job's step time with and without `collscope watch`.

Method: benchmarks/watch_job.py (4 gloo ranks under torchrun, a 512-1024-512 MLP, batch 64,
real compute and DDP's all_reduce per step, no sleeps) runs PAIRS times plain and PAIRS times
under `collscope watch --interval I`, interleaved in one run (plain, watched, watched, plain,
...: the order alternates so a drift in the host's load falls on both alike). Each job's
figure is the median of rank 0's per-step wall times (after 20 warm-up steps); each pair's
overhead = watched median / plain median - 1; the result is the median over pairs, with each
pair shown. Target: <= 1 %.

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


def job_median_s(watched: bool, steps: int, interval: float, folder: Path, index: int) -> float:
    from collscope.runtime.spawn import free_loopback_port

    times = folder / f"steps{index}.json"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "4",
               "--master-port", str(free_loopback_port()), JOB]
    if watched:
        command = [sys.executable, "-m", "collscope", "watch", "--interval", str(interval),
                   "--json", str(folder / f"watch{index}.jsonl"), "--", *command]
    env = dict(os.environ, STEPS=str(steps), STEP_TIMES=str(times),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run(command, env=env, check=True, timeout=600, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=folder)
    return statistics.median(json.loads(times.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            medians = {w: job_median_s(w, args.steps, args.interval, Path(tmp), 2 * pair + i)
                       for i, w in enumerate(order)}
            rows.append((pair, medians[False], medians[True], medians[True] / medians[False] - 1))
            print(f"pair {pair}: plain {medians[False] * 1e3:.2f} ms  watched "
                  f"{medians[True] * 1e3:.2f} ms  overhead {rows[-1][3] * 100:+.2f} %", flush=True)
    overhead = statistics.median(r[3] for r in rows)
    print(f"median overhead over {len(rows)} pairs: {overhead * 100:+.2f} % (target <= 1 %); "
          f"step time = median of rank 0's per-step wall times, 4 gloo ranks, "
          f"--interval {args.interval:g}")


if __name__ == "__main__":
    main()
