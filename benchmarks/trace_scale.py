"""`collscope trace` on real-size traces: time and peak memory per size and rank count, and
HolisticTraceAnalysis on the same single-rank trace.

The traces are built from a real fixture trace (default: HolisticTraceAnalysis' nccl_data, an
A100 job whose all-reduces partly overlap compute): its events repeated until a rank's trace
holds the size asked for, each repetition shifted in time (by the fixture's span plus 1 ms)
and in its ids (correlation, External id, Record function id, flow ids: by the largest id + 1)
and its ProfilerStep numbers continued, so that the repeated steps are new steps, not
duplicates. Written as gzip, as the profiler writes them (level 1 to build them quickly;
the gzip members are: the header with the rank's distributedInfo, the shared events, the
closing bracket); N ranks are N copies whose distributedInfo names rank 0..N-1 of N, so their
ranks are identical: no rank is late, and none may be named a straggler.

Each tool runs in a fresh child process (benchmarks/trace_tools.py: wall time, and the peak
summed RSS of the whole process tree sampled with psutil, collscope's worker processes
included). MB are the uncompressed JSON of one rank; MB/s = all ranks' MB / work time (the
analysis, imports excluded; the wall time adds interpreter start and imports, ~0.3-1 s); CPU
s per 100 MB = the work's CPU time over all ranks' MB: flat when time grows linearly.
With --repeat N each case runs N times, interleaved with the others of its size, and the row
shows the run of median work time (on a shared machine the load moves single runs).
Everything is written under a temporary folder, removed at the end.

Run (HolisticTraceAnalysis from the `hta` extra; without it only collscope is measured):

    flock /tmp/collscope-measure.lock .venv/bin/python benchmarks/trace_scale.py \\
        --sizes 30,100,300 --ranks 1,8
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

import msgspec
from trace_tools import REPO, run_child

DEFAULT_FIXTURE = (REPO / "tests" / "fixtures" / "traces"
                   / "HolisticTraceAnalysis__nccl_data_rank0of2.json.gz")
GAP_US = 1000.0
ID_ARGS = ("correlation", "External id", "Record function id")
STEP = "ProfilerStep#"


class Unit:
    """The fixture's events and how far to shift each repetition."""

    def __init__(self, fixture: Path):
        import gzip

        doc = msgspec.json.decode(gzip.decompress(fixture.read_bytes()))
        self.head = {k: v for k, v in doc.items() if k != "traceEvents"}
        self.events = doc["traceEvents"]
        timed = [e for e in self.events if isinstance(e.get("ts"), (int, float))]
        self.period = (max(e["ts"] + (e.get("dur") or 0) for e in timed)
                       - min(e["ts"] for e in timed) + GAP_US)
        ids = [e["id"] for e in self.events if isinstance(e.get("id"), int)]
        ids += [a[k] for e in self.events for a in [e.get("args") or {}] for k in ID_ARGS
                if isinstance(a.get(k), int)]
        self.id_span = max(ids, default=0) + 1
        steps = [int(e["name"][len(STEP):]) for e in self.events
                 if str(e.get("name", "")).startswith(STEP)]
        self.step_span = max(steps) - min(steps) + 1 if steps else 0

    def repetition(self, k: int) -> bytes:
        """The events of repetition ``k``, encoded, without the list's brackets."""
        shifted = []
        for event in self.events:
            event = dict(event)
            if isinstance(event.get("ts"), (int, float)):
                event["ts"] += k * self.period
            if isinstance(event.get("id"), int):
                event["id"] += k * self.id_span
            name = event.get("name")
            if isinstance(name, str) and name.startswith(STEP):
                event["name"] = f"{STEP}{int(name[len(STEP):]) + k * self.step_span}"
            args = event.get("args")
            if args and any(isinstance(args.get(key), int) for key in ID_ARGS):
                event["args"] = {key: value + k * self.id_span
                                 if key in ID_ARGS and isinstance(value, int) else value
                                 for key, value in args.items()}
            shifted.append(event)
        return msgspec.json.encode(shifted)[1:-1]


def gzip_member(data: bytes) -> bytes:
    pack = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return pack.compress(data) + pack.flush()


def write_events(unit: Unit, megabytes: float, path: Path) -> int:
    """The repeated events as one gzip member at ``path``; returns their uncompressed bytes."""
    pack = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    written = 0
    with path.open("wb") as out:
        k = 0
        while written < megabytes * 1e6:
            piece = (b"," if k else b"") + unit.repetition(k)
            out.write(pack.compress(piece))
            written += len(piece)
            k += 1
        out.write(pack.flush())
    return written


def write_ranks(unit: Unit, events: Path, folder: Path, ranks: int) -> list[Path]:
    folder.mkdir()
    body = events.read_bytes()
    files = []
    for rank in range(ranks):
        head = dict(unit.head)
        head["distributedInfo"] = dict(head.get("distributedInfo") or {}, rank=rank,
                                       world_size=ranks)
        opening = msgspec.json.encode(head)[:-1] + b', "traceEvents": ['
        path = folder / f"rank{rank}.json.gz"
        path.write_bytes(gzip_member(opening) + body + gzip_member(b"]}"))
        files.append(path)
    return files


def parse_list(text: str, kind: type) -> list:
    return [kind(part) for part in text.split(",") if part.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE)
    parser.add_argument("--sizes", default="30,100,300", help="MB per rank, uncompressed")
    parser.add_argument("--ranks", default="1,8", help="rank counts")
    parser.add_argument("--hta-size", type=float, default=300.0,
                        help="MB per rank of the single-rank trace HTA also reads (0: none)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each collscope case")
    args = parser.parse_args()
    sizes, rank_counts = parse_list(args.sizes, float), parse_list(args.ranks, int)
    with_hta = args.hta_size > 0 and importlib.util.find_spec("hta") is not None
    unit = Unit(args.fixture)
    print(f"fixture {args.fixture.name}: {len(unit.events)} events per repetition, "
          f"{unit.step_span} ProfilerSteps, shifted {unit.period / 1e3:.1f} ms each")
    print(f"load average at the start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    print("\n| MB per rank | ranks | MB (gz) per rank | wall s | work s | MB/s | "
          "work s per 100 MB per rank | work CPU s | CPU s per 100 MB | "
          "peak MB (process tree) | largest process MB | straggler |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    hta_rows = []
    root = Path(tempfile.mkdtemp(prefix="collscope-trace-scale-"))
    try:
        for size in sizes:
            events = root / f"events-{size:g}.gz"
            raw = write_events(unit, size, events)
            cases = {ranks: write_ranks(unit, events, root / f"{size:g}MB-{ranks}ranks", ranks)
                     for ranks in rank_counts}
            runs: dict[int, list[dict]] = {ranks: [] for ranks in rank_counts}
            for _ in range(args.repeat):
                for ranks, files in cases.items():
                    runs[ranks].append(run_child("collscope", files))
            for ranks, files in cases.items():
                ours = sorted(runs[ranks], key=lambda r: r["work_s"])[len(runs[ranks]) // 2]
                if ours["error"]:
                    print(f"| {raw / 1e6:.0f} | {ranks} | collscope failed: {ours['error']} |")
                    continue
                print(f"| {raw / 1e6:.0f} | {ranks} | {files[0].stat().st_size / 1e6:.1f} | "
                      f"{ours['wall_s']:.2f} | {ours['work_s']:.2f} | "
                      f"{ranks * raw / 1e6 / ours['work_s']:.0f} | "
                      f"{100 * ours['work_s'] / (raw / 1e6):.2f} | {ours['work_cpu_s']:.2f} | "
                      f"{100 * ours['work_cpu_s'] / (ranks * raw / 1e6):.2f} | "
                      f"{max(r['tree_peak_mb'] for r in runs[ranks]):.0f} | "
                      f"{max(r['peak_mb'] for r in runs[ranks]):.0f} | "
                      f"{', '.join(map(str, ours['stragglers'])) or 'none'} |", flush=True)
                if with_hta and ranks == 1 and math.isclose(size, args.hta_size):
                    hta_rows.append((raw, run_child("hta", files), ours))
                shutil.rmtree(files[0].parent)
            events.unlink()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    if hta_rows:
        print("\n| MB | HTA work s | HTA CPU s | HTA peak MB | collscope work s | "
              "collscope CPU s | collscope peak MB | speed-up (work) | speed-up (CPU) | "
              "HTA overlap % | collscope overlap % |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for raw, hta, ours in hta_rows:
            if hta["error"]:
                print(f"| {raw / 1e6:.0f} | HTA failed: {hta['error']} |")
                continue
            print(f"| {raw / 1e6:.0f} | {hta['work_s']:.2f} | {hta['work_cpu_s']:.2f} | "
                  f"{hta['tree_peak_mb']:.0f} | {ours['work_s']:.2f} | {ours['work_cpu_s']:.2f} | "
                  f"{ours['tree_peak_mb']:.0f} | {hta['work_s'] / ours['work_s']:.1f}x | "
                  f"{hta['work_cpu_s'] / ours['work_cpu_s']:.1f}x | {hta['overlap']:.2f} | "
                  f"{ours['overlap']:.2f} |")
    elif args.hta_size > 0:
        print("\nHolisticTraceAnalysis not installed (pip install '.[hta]'): not compared")
    return 0


if __name__ == "__main__":
    sys.exit(main())
