"""How long `collscope hang` takes, and how much memory its whole process tree holds, on large
dump sets: W ranks x N entries each, one rank (W // 2) never entering the last collective.

The dumps are shaped as NCCL writes them: the pickle form holds the bytes torch's C++
pickler writes (benchmarks/torch_pickle.py, byte-identical to every real dump in tests/fixtures:
strings memoised by value, a stack frame's dict shared by every entry that ran through it, keys
in torch's order) with a Python stack of --frames frames per entry, NCCL's fields (``nccl:``
names, ``completed`` states, start/end times, ``duration_ms``) and a ``pg_config`` listing the W
ranks of the default group; the JSON form as ``_dump_nccl_trace_json`` writes it (no frames).
Every healthy rank's dump holds the same bytes, so they are hard links to one file (a 16 384-rank
set would be 7.8 GB of pickle or 21 GB of JSON otherwise): every file is still opened, read and
decoded, but from the page cache, so reading a real set from storage adds its read time
(--distinct writes each rank's own file).

Each size runs ``collscope hang DIR --json FILE`` as a user does, in its own process; its wall
time, its tree's CPU time (getrusage of the reaped children) and the peak of the summed RSS of
the process and its worker processes (psutil, sampled every 50 ms; shared pages of forked
workers are counted in each, so the sum errs high) are printed, with the verdict's culprits.

usage: python benchmarks/hang_scale.py [--ranks 1024 4096 16384] [--entries 2000]
           [--forms pickle json] [--frames 16] [--dir DIR] [--distinct] [--json FILE]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))   # not the tree: PYTHONPATH picks collscope's
import torch_pickle  # noqa: E402

TARGET_WALL_S = 60.0           # issue 28: 16 384 ranks x 2 000 entries on this 2-core machine
TARGET_PEAK_MIB = 2048
BASE_NS = 1_796_155_784_988_074_546


def frame_table(depth: int) -> list[dict[str, Any]]:
    """A training step's Python stack, innermost first (as the dump lists it)."""
    frames = [{"name": "all_reduce", "line": 3245, "filename":
               "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"},
              {"name": "wrapper", "line": 83, "filename":
               "/opt/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py"}]
    frames += [{"name": f"forward_{i}", "line": 100 + i,
                "filename": f"/opt/job/megatron/core/layer_{i}.py"} for i in range(depth - 3)]
    return (frames + [{"name": "<module>", "line": 93, "filename": "/opt/job/train.py"}])[:depth]


def make_dump(world: int, issued: int, entries: int, form: str, frames: list[dict[str, Any]],
              ) -> bytes:
    """One rank's dump: ``issued`` all_reduce of the default group, every one but the last of
    the job (``entries``) completed."""
    ring = []
    for i in range(issued):
        done = i < entries - 1
        entry = {"frames": list(frames)} if form == "pickle" else {}   # a list per entry
        entry |= {"record_id": i, "pg_id": 0, "process_group": ("0", "default_pg"),
                 "thread_name": "pt_main_thread", "thread_id": "140030649969536",
                 "collective_seq_id": i + 1, "p2p_seq_id": 0, "op_id": i + 1,
                 "profiling_name": "nccl:all_reduce", "time_created_ns": BASE_NS + i * 1000,
                 "input_sizes": [[4096, 1024]], "input_dtypes": ["BFloat16"],
                 "output_sizes": [[4096, 1024]], "output_dtypes": ["BFloat16"],
                 "state": "completed" if done else "started",
                 "time_discovered_started_ns": BASE_NS + i * 1000 + 10,
                 "time_discovered_completed_ns": BASE_NS + i * 1000 + 500 if done else None,
                 "retired": done, "timeout_ms": 600000, "is_p2p": False,
                 "duration_ms": 0.49 if done else None}
        ring.append(entry)
    dump = {"version": "2.10",
            "pg_config": {"0": {"name": "0", "desc": "default_pg",
                                "ranks": str(list(range(world)))}},
            "nccl_version": "2.27.3",
            "pg_status": {"0": {"last_enqueued_collective": issued,
                                "last_started_collective": issued,
                                "last_completed_collective": min(issued, entries - 1)}},
            "entries": ring}
    return torch_pickle.dumps(dump) if form == "pickle" else json.dumps(dump).encode()


def make(folder: Path, world: int, entries: int, form: str, depth: int, distinct: bool) -> Path:
    """The W files of one set; returns rank 0's (a healthy rank's)."""
    frames = frame_table(depth)
    healthy = make_dump(world, entries, entries, form, frames)
    culprit = make_dump(world, entries - 1, entries, form, frames)
    suffix = ".json" if form == "json" else ""
    first = folder / f"nccl_trace_rank_0{suffix}"
    first.write_bytes(healthy)
    for rank in range(1, world):
        path = folder / f"nccl_trace_rank_{rank}{suffix}"
        if rank == world // 2:
            path.write_bytes(culprit)
        elif distinct:
            path.write_bytes(healthy)
        else:
            os.link(first, path)
    return first


class TreePeak:
    """The peak of the summed RSS of a process and its descendants, sampled."""

    def __init__(self, pid: int, every_s: float = 0.05) -> None:
        self.root = psutil.Process(pid)
        self.every_s = every_s
        self.peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            total = 0
            try:
                for process in [self.root, *self.root.children(recursive=True)]:
                    try:
                        total += process.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                return
            self.peak = max(self.peak, total)
            self.stop.wait(self.every_s)

    def finish(self) -> int:
        self.stop.set()
        self.thread.join()
        return self.peak


def speed_gauge_ms(path: Path, form: str, repeats: int = 15) -> float:
    """This machine's speed at the moment: the CPU ms Python's own decoder (pickle.loads,
    json.loads) takes on one rank's file, best of ``repeats``. A shared VM's speed moves (the
    same set took 41.6 s and 49.2 s an hour apart); the gauge says which moment a row saw."""
    data = path.read_bytes()
    decode = pickle.loads if form == "pickle" else json.loads
    best = float("inf")
    gc.disable()              # as collscope reads: the collector's passes are not decoding
    try:
        for _ in range(repeats):
            started = time.process_time()
            decode(data)
            best = min(best, time.process_time() - started)
    finally:
        gc.enable()
    return best * 1e3


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(folder: Path, out: Path) -> tuple[float, float, int, list[int]]:
    """(wall s, CPU s, peak MiB, culprits) of ``collscope hang FOLDER --json OUT``."""
    command = [sys.executable, "-m", "collscope", "hang", str(folder), "--json", str(out)]
    cpu = children_cpu_s()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    sampler = TreePeak(process.pid)
    _, stderr = process.communicate(timeout=3600)
    wall = time.perf_counter() - started
    peak = sampler.finish()
    if process.returncode not in (0, 1):
        raise SystemExit(f"collscope hang exited {process.returncode}: {stderr.decode()[-500:]}")
    verdict = [json.loads(line) for line in out.read_text().splitlines()][-1]
    return wall, children_cpu_s() - cpu, peak >> 20, verdict["culprit_ranks"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--forms", nargs="+", choices=["pickle", "json"],
                        default=["pickle", "json"])
    parser.add_argument("--frames", type=int, default=16, help="stack frames per entry (pickle)")
    parser.add_argument("--dir", type=Path, default=None, help="where the sets are written")
    parser.add_argument("--distinct", action="store_true",
                        help="write each rank's own file instead of hard links")
    parser.add_argument("--json", type=Path, default=None, help="hang_scale records (JSON Lines)")
    args = parser.parse_args()
    print(f"{'form':<7}{'ranks':>7}{'entries':>8}{'MB/rank':>8}{'wall s':>8}{'CPU s':>8}"
          f"{'peak MiB':>9}  culprits  target (<= {TARGET_WALL_S:.0f} s, <= "
          f"{TARGET_PEAK_MIB} MiB at 16 384)  load before-after  gauge ms", flush=True)
    records = []
    for form in args.forms:
        for world in args.ranks:
            load_before = os.getloadavg()[0]
            with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
                folder = Path(tmp) / "dumps"
                folder.mkdir()
                first = make(folder, world, args.entries, form, args.frames, args.distinct)
                size, gauge = first.stat().st_size, speed_gauge_ms(first, form)
                wall, cpu, peak, culprits = measure(folder, Path(tmp) / "hang.jsonl")
            met = "met" if wall <= TARGET_WALL_S and peak <= TARGET_PEAK_MIB else "NOT met"
            print(f"{form:<7}{world:>7}{args.entries:>8}{size / 1e6:>8.2f}{wall:>8.1f}"
                  f"{cpu:>8.1f}{peak:>9}  {culprits}  {met}  {load_before:.1f}-"
                  f"{os.getloadavg()[0]:.1f}  {gauge:.2f}", flush=True)
            records.append({"kind": "hang_scale", "form": form, "ranks": world,
                            "entries": args.entries, "frames": args.frames if form == "pickle"
                            else 0, "bytes_per_rank": size, "wall_s": round(wall, 2),
                            "cpu_s": round(cpu, 2), "peak_mib": peak,
                            "culprit_ranks": culprits, "cores": os.cpu_count(),
                            "load_1min_before": round(load_before, 1),
                            "load_1min": round(os.getloadavg()[0], 1),
                            "decode_gauge_ms": round(gauge, 2),
                            "hard_linked": not args.distinct})
            if args.json:
                args.json.write_text("".join(json.dumps(r) + "\n" for r in records))


if __name__ == "__main__":
    main()
