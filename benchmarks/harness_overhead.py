"""Harness overhead: `collscope bench` against a minimal raw torch.distributed loop.

Both time the same in-place all_reduce sizes on the same process group, interleaved round by
round (the order alternates) so machine drift affects both alike. The raw loop is the least a
benchmark can do: perf_counter around N back-to-back dist.all_reduce calls, mean per op,
averaged over ranks, which is also how collscope reports ``time_us`` on CPU. The ratio
collscope / raw per round is reported as its median over rounds.

`--control` replaces collscope by a second raw loop (an A/A run): its ratios show the noise
floor of the machine, against which the collscope / raw ratios should be read.

Run (spawns 2 local gloo ranks through torchrun when not already under a launcher):

    .venv/bin/python benchmarks/harness_overhead.py [--rounds 45] [--iters 40] [--control]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SIZES = [4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]


def raw_loop_us(size: int, iters: int, warmup: int) -> float:
    import torch
    import torch.distributed as dist

    buf = torch.zeros(size // 4, dtype=torch.float32)
    for _ in range(warmup):
        dist.all_reduce(buf)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf)
    mean_us = (time.perf_counter() - start) / iters * 1e6
    total = torch.tensor([mean_us], dtype=torch.float64)
    dist.all_reduce(total)
    return total.item() / dist.get_world_size()


def collscope_us(size: int, iters: int, warmup: int, session) -> float:
    from collscope.bench import BenchConfig, run

    config = BenchConfig(min_bytes=size, max_bytes=size, iters=iters, warmup_iters=warmup,
                         check=0, out_of_place=False)
    (result,) = run(config, session=session)
    return result.time_us


def measure(args: argparse.Namespace) -> None:
    import torch.distributed as dist

    from collscope.runtime.dist import attach

    dist.init_process_group("gloo")
    session = attach()
    ratios: dict[int, list[float]] = {size: [] for size in SIZES}
    times: dict[int, list[tuple[float, float]]] = {size: [] for size in SIZES}
    for round_index in range(args.rounds):
        for size in SIZES:
            def ours_us(size: int = size) -> float:
                if args.control:
                    return raw_loop_us(size, args.iters, args.warmup)
                return collscope_us(size, args.iters, args.warmup, session)

            if round_index % 2 == 0:
                raw = raw_loop_us(size, args.iters, args.warmup)
                ours = ours_us()
            else:
                ours = ours_us()
                raw = raw_loop_us(size, args.iters, args.warmup)
            ratios[size].append(ours / raw)
            times[size].append((raw, ours))
    session.watchdog.close()
    if dist.get_rank() == 0:
        rows = []
        other = "second raw loop (control)" if args.control else "collscope"
        print(f"| size | raw loop median (us) | {other} median (us) | median ratio "
              f"({args.rounds} rounds) |")
        print("|---:|---:|---:|---:|")
        for size in SIZES:
            raw_med = statistics.median(t[0] for t in times[size])
            ours_med = statistics.median(t[1] for t in times[size])
            ratio = statistics.median(ratios[size])
            rows.append({"size_bytes": size, "raw_us": raw_med, "collscope_us": ours_med,
                         "median_ratio": ratio, "ratios": ratios[size]})
            print(f"| {size} | {raw_med:.1f} | {ours_med:.1f} | {ratio:.3f} |")
        if args.json:
            Path(args.json).write_text(json.dumps({"world_size": dist.get_world_size(),
                                                   "iters": args.iters, "rows": rows}, indent=1))
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=45)
    parser.add_argument("--iters", type=int, default=40)
    parser.add_argument("--control", action="store_true",
                        help="A/A run: a second raw loop instead of collscope")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--json", help="also write the rows as JSON here")
    args = parser.parse_args()
    if "RANK" in os.environ:
        measure(args)
        return
    from collscope.runtime.spawn import free_loopback_port

    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
               str(args.nproc), "--master-port", str(free_loopback_port()), __file__,
               *sys.argv[1:]]
    raise SystemExit(subprocess.call(command))


if __name__ == "__main__":
    main()
