"""One-command validation of collscope's GPU code paths on a machine with one or more GPUs.

Run on a CUDA or ROCm node (under 5 minutes):

    python benchmarks/gpu_check.py [--timeout 120]

and it prints one verdict per item (PASS, FAIL or SKIP, with what it saw):

  binding        each local rank drives its own GPU; more ranks than GPUs exits 2 in one line
  bench-1        bench on nccl/rccl, world size 1: default (every collective), -z 1, -a 0/2/3
                 (all_reduce, all_gather), with the check; #wrong of both placements 0
  bench-2        the same on 2 ranks (2 GPUs; on one GPU NCCL/RCCL refuse two ranks: SKIP)
  event-vs-wall  device-event time of a loop vs wall-clock time of the same loop, within 10%
                 at >= 16 MiB
  memory-cap     -e 8G runs without running out of memory (capped with nccl-tests' note
                 where the GPU is smaller)
  train          train --preset tiny on the GPU: runs, learns, estimate vs measured peak
  overlap        overlap on the GPU (matmul on its own stream, all_reduce on NCCL's)
  monitor        monitor --duration 3 through amdsmi/NVML: utilization and memory present,
                 in sane units
  doctor         doctor --json on the node: pure JSON, the vendor's GPUs listed

Without a GPU it prints "no GPU: skipped" and exits 0. Exit code 1 when any item failed.
Every command is an argument list with a timeout (no shell); each item is independent.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EVENT_WALL_TOLERANCE = 0.10
EVENT_WALL_MIN_BYTES = 16 * 1024**2
# The event-vs-wall loop runs this long, so the ~1 ms stream hold before its first event and
# the final synchronise are under 2% of the wall time.
EVENT_WALL_LOOP_S = 0.1


@dataclass
class Verdict:
    item: str
    status: str        # PASS, FAIL or SKIP
    detail: str

    def line(self) -> str:
        return f"{self.status:4s}  {self.item:13s}  {self.detail}"


@dataclass
class Ran:
    """What one collscope command did (the shape of subprocess.CompletedProcess)."""

    returncode: int
    stdout: str
    stderr: str


Runner = Callable[[Sequence[str], float], Ran]


def run_collscope(args: Sequence[str], timeout: float) -> Ran:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}"
    try:
        done = subprocess.run([sys.executable, "-m", "collscope", *args], capture_output=True,
                              text=True, timeout=timeout, env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        return Ran(124, "", f"timed out after {timeout:g} s")
    return Ran(done.returncode, done.stdout, done.stderr)


def _last_error(ran: Ran) -> str:
    lines = [line for line in ran.stderr.strip().splitlines() if line.strip()]
    return f"exit {ran.returncode}: {lines[-1][:200] if lines else 'no message'}"


def _rows(stdout: str) -> list[list[str]]:
    """The data rows of collscope bench's nccl-tests table, split on whitespace."""
    return [line.split() for line in stdout.splitlines()
            if line.startswith(" ") and line.split() and line.split()[0].isdigit()]


def check_binding(run: Runner, gpus: int, timeout: float) -> Verdict:
    too_many = run(["bench", "--nproc", str(gpus + 1), "-b", "8", "-e", "8"], timeout)
    lines = too_many.stderr.strip().splitlines()
    if too_many.returncode != 2 or len(lines) != 1 or "GPU(s) visible" not in lines[0]:
        return Verdict("binding", "FAIL", f"--nproc {gpus + 1} on {gpus} GPU(s): expected exit "
                       f"2 with one line, got {_last_error(too_many)}")
    ranks = min(gpus, 2)
    ran = run(["bench", "--nproc", str(ranks), "-b", "8", "-e", "8", "-n", "2", "-w", "1"],
              timeout)
    devices = sorted({line.split(" device ")[1].split()[0] for line in ran.stdout.splitlines()
                      if line.startswith("#  Rank") and " device " in line})
    if ran.returncode != 0 or devices != [str(i) for i in range(ranks)]:
        return Verdict("binding", "FAIL", f"{ranks} rank(s) bound to devices {devices}: "
                       f"{_last_error(ran)}")
    return Verdict("binding", "PASS", f"{ranks} rank(s) on devices {', '.join(devices)}; "
                   f"--nproc {gpus + 1} refused: {lines[0][:120]}")


BENCH_MODES = (("default", []), ("-z 1", ["-z", "1"]), ("-a 0", ["-a", "0"]),
               ("-a 2", ["-a", "2"]), ("-a 3", ["-a", "3"]))
# The default mode runs every collective (sendrecv needs 2 ranks); the others these two.
EVERY_COLLECTIVE = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast",
                    "reduce", "sendrecv")
MODE_COLLECTIVES = ("all_reduce", "all_gather")
# A row's #wrong columns once split on whitespace: out-of-place, in-place. N/A: a placement
# that does not exist or cannot be verified (alltoall, sendrecv in place).
WRONG_COLUMNS = (8, 12)


def wrong_cells(row: Sequence[str]) -> list[str]:
    """The row's verified #wrong values (both placements, N/A left out)."""
    return [row[i] for i in WRONG_COLUMNS if i < len(row) and row[i] != "N/A"]


def bench_collectives(mode: str, ranks: int) -> list[str]:
    if mode != "default":
        return list(MODE_COLLECTIVES)
    return [c for c in EVERY_COLLECTIVE if ranks >= 2 or c != "sendrecv"]


def check_bench(run: Runner, ranks: int, gpus: int, timeout: float) -> Verdict:
    item = f"bench-{ranks}"
    if ranks > gpus:
        return Verdict(item, "SKIP", f"{gpus} GPU: NCCL/RCCL refuse two ranks on one GPU")
    seen = []
    for name, flags in BENCH_MODES:
        ran = run(["bench", *bench_collectives(name, ranks), "--nproc", str(ranks), "-b",
                   "8", "-e", "64M", "-f", "8", "-n", "5", "-w", "2", "-c", "1", *flags],
                  timeout)
        rows = _rows(ran.stdout)
        # A row with no verified placement under -c 1 is as bad as a wrong one.
        wrong = [r for r in rows if not wrong_cells(r) or set(wrong_cells(r)) != {"0"}]
        if ran.returncode != 0 or not rows or wrong:
            return Verdict(item, "FAIL", f"{name}: {len(rows)} rows, {len(wrong)} with #wrong "
                           f"!= 0; {_last_error(ran)}")
        seen.append(f"{name} {len(rows)} rows")
    return Verdict(item, "PASS", "; ".join(seen) + ", every #wrong 0")


def event_vs_wall(sizes: Sequence[int]) -> list[tuple[int, float, float]]:
    """(bytes, event seconds, wall seconds) of the same back-to-back all_reduce loop on a
    1-rank NCCL/RCCL group on GPU 0: collscope's timed loop, perf_counter around it; enough
    iterations for EVENT_WALL_LOOP_S."""
    import torch
    import torch.distributed as dist

    from collscope.bench.config import BenchConfig
    from collscope.bench.runner import Runner as BenchRunner
    from collscope.runtime.dist import attach
    from collscope.runtime.spawn import free_loopback_port

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_loopback_port()))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    session = attach(60.0)
    try:
        runner = BenchRunner(BenchConfig(), session)
        found = []
        for size in sizes:
            buf = torch.ones(size // 4, device="cuda")

            def launch(buf: Any = buf) -> None:
                dist.all_reduce(buf)

            probe, _ = runner._timed_loop(launch, 5)
            iters = max(20, min(5000, int(EVENT_WALL_LOOP_S / max(probe / 5, 1e-6))))
            torch.cuda.synchronize()
            began = time.perf_counter()
            loop, _ = runner._timed_loop(launch, iters)
            torch.cuda.synchronize()
            found.append((size, loop, time.perf_counter() - began))
    finally:
        session.close()
        dist.destroy_process_group()
    return found


def judge_event_vs_wall(found: Sequence[tuple[int, float, float]]) -> Verdict:
    parts, bad = [], []
    for size, event_s, wall_s in found:
        ratio = event_s / wall_s if wall_s > 0 else 0.0
        parts.append(f"{size >> 20} MiB events/wall {ratio:.3f}")
        if size >= EVENT_WALL_MIN_BYTES and abs(1 - ratio) > EVENT_WALL_TOLERANCE:
            bad.append(size)
    status = "FAIL" if bad or not found else "PASS"
    return Verdict("event-vs-wall", status, "; ".join(parts) or "nothing measured")


def check_memory_cap(run: Runner, timeout: float) -> Verdict:
    ran = run(["bench", "all_reduce", "--nproc", "1", "-b", "1G", "-e", "8G", "-f", "8",
               "-n", "2", "-w", "1"], timeout)
    if ran.returncode != 0:
        return Verdict("memory-cap", "FAIL", _last_error(ran))
    note = next((line for line in ran.stdout.splitlines() if "Reducing maxBytes" in line), "")
    largest = max((int(r[0]) for r in _rows(ran.stdout)), default=0)
    return Verdict("memory-cap", "PASS", f"largest size run {largest} B"
                   + (f" ({note.strip('# ')})" if note else " (8 GiB fits)"))


def check_train(run: Runner, timeout: float, workdir: Path) -> Verdict:
    out = workdir / "train.jsonl"
    ran = run(["train", "--nproc", "1", "--preset", "tiny", "--steps", "4", "--warmup", "2",
               "--json", str(out)], timeout)
    if ran.returncode != 0 or not out.exists():
        return Verdict("train", "FAIL", _last_error(ran))
    record = [json.loads(line) for line in out.read_text().splitlines()][-1]
    ratio = record["peak_memory_bytes"] / max(1, record.get("estimated_memory_bytes") or 1)
    learned = record["loss_last"] < record["loss_first"]
    status = "PASS" if learned and "device events" in record["timing"] else "FAIL"
    return Verdict("train", status, f"step {record['step_time_ms']:.1f} ms, loss "
                   f"{record['loss_first']:.2f} -> {record['loss_last']:.2f}, peak / estimate "
                   f"{ratio:.2f}, timing: {record['timing'][:60]}")


def check_overlap(run: Runner, timeout: float) -> Verdict:
    ran = run(["overlap", "--nproc", "1", "--iters", "5", "--warmup", "2"], timeout)
    line = next((x for x in ran.stdout.splitlines() if "overlap efficiency" in x
                 and not x.startswith("#")), "")
    if ran.returncode != 0 or not line:
        return Verdict("overlap", "FAIL", _last_error(ran))
    return Verdict("overlap", "PASS", line.strip())


def judge_monitor(samples: Sequence[dict[str, Any]]) -> Verdict:
    """Utilization and memory of GPU 0 present in every sample, in sane units."""
    if not samples:
        return Verdict("monitor", "FAIL", "no sample record")
    problems = []
    for sample in samples:
        metrics = sample.get("metrics", {})
        util = metrics.get("gpu.0.util_percent")
        used, total = metrics.get("gpu.0.mem_used_bytes"), metrics.get("gpu.0.mem_total_bytes")
        if util is None or not 0 <= util <= 100:
            problems.append(f"util {util}")
        if used is None or total is None or not 0 <= used <= total or total < 1024**3:
            problems.append(f"memory {used}/{total}")
    last = samples[-1]["metrics"]
    if problems:
        return Verdict("monitor", "FAIL", "; ".join(sorted(set(problems)))[:200])
    return Verdict("monitor", "PASS", f"{len(samples)} samples; gpu.0 util "
                   f"{last['gpu.0.util_percent']:g}%, memory {last['gpu.0.mem_used_bytes']:.3g}"
                   f" / {last['gpu.0.mem_total_bytes']:.3g} B")


def check_monitor(run: Runner, timeout: float, workdir: Path) -> Verdict:
    out = workdir / "monitor.jsonl"
    ran = run(["monitor", "--duration", "3", "--interval", "0.5", "--json", str(out)],
              timeout)
    if ran.returncode != 0 or not out.exists():
        return Verdict("monitor", "FAIL", _last_error(ran))
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return judge_monitor([r for r in records if r.get("kind") == "sample"])


def check_doctor(run: Runner, timeout: float) -> Verdict:
    ran = run(["doctor", "--json"], timeout)
    try:
        report = json.loads(ran.stdout)
    except ValueError:
        return Verdict("doctor", "FAIL", f"stdout is not pure JSON: {ran.stdout[:120]!r}")
    gpus = report.get("inventory", {}).get("gpus") or []
    worst = [f["id"] for f in report.get("findings", []) if f.get("level") == "fail"]
    if not gpus:
        return Verdict("doctor", "FAIL", "no GPU in the inventory")
    return Verdict("doctor", "PASS", f"{len(gpus)} GPU(s) listed; exit {ran.returncode}; "
                   f"failed checks: {', '.join(worst) or 'none'}")


def gpu_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def main(argv: Sequence[str] | None = None, run: Runner = run_collscope,
         gpus: int | None = None,
         measure: Callable[[Sequence[int]], Sequence[tuple[int, float, float]]] = event_vs_wall,
         ) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds each collscope command may run (default 120)")
    args = parser.parse_args(argv)
    gpus = gpu_count() if gpus is None else gpus
    if gpus == 0:
        print("no GPU: skipped")
        return 0
    started = time.monotonic()
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="collscope-gpu-check-") as folder:
        workdir = Path(folder)
        checks: list[Callable[[], Verdict]] = [
            lambda: check_binding(run, gpus, args.timeout),
            lambda: check_bench(run, 1, gpus, args.timeout),
            lambda: check_bench(run, 2, gpus, args.timeout),
            lambda: judge_event_vs_wall(measure([16 << 20, 64 << 20, 256 << 20])),
            lambda: check_memory_cap(run, args.timeout),
            lambda: check_train(run, args.timeout, workdir),
            lambda: check_overlap(run, args.timeout),
            lambda: check_monitor(run, args.timeout, workdir),
            lambda: check_doctor(run, args.timeout),
        ]
        for check in checks:
            try:
                verdict = check()
            except Exception as error:  # one broken item must not hide the others
                verdict = Verdict(getattr(check, "__name__", "check"), "FAIL",
                                  f"{type(error).__name__}: {error}")
            print(verdict.line(), flush=True)
            verdicts.append(verdict)
    failed = [v for v in verdicts if v.status == "FAIL"]
    print(f"{len(verdicts) - len(failed)}/{len(verdicts)} items without failure "
          f"in {time.monotonic() - started:.0f} s on {gpus} GPU(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
