"""`collscope trace` against HolisticTraceAnalysis: load + overlap on the same traces.

Each tool analyses each fixture trace in a fresh child process (so peak memory is that of the
tool alone; benchmarks/trace_tools.py, shared with trace_scale.py, says how): HTA builds its
TraceAnalysis and calls get_comm_comp_overlap(); collscope runs its `trace` analysis. Timed:
the work itself with perf_counter, imports excluded (reported separately); memory: the peak
RSS of the child's process tree (imports included). The overlap each tool reports is printed
beside the other, and the run fails when they differ by more than one percentage point where
HTA gives a figure.

Also measures the JSON decoders on the largest trace (stdlib json, orjson, msgspec into dicts,
msgspec into collscope's typed structs), the choice collscope.trace.events made.

Run (needs `pip install HolisticTraceAnalysis`, the `hta` extra):

    .venv/bin/python benchmarks/trace_speed.py [--traces tests/fixtures/traces]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from trace_tools import REPO, run_child

sys.path.insert(0, str(REPO))  # this tree, not an installed collscope
DEFAULT_TRACES = REPO / "tests" / "fixtures" / "traces"

def decoders(path: Path) -> list[tuple[str, float, float]]:
    """(decoder, best-of-3 seconds, MB retained by the decoded result) on one trace."""
    import gc
    import gzip
    import tracemalloc

    import msgspec
    import orjson

    from collscope.trace.events import _DECODER

    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    rows = []
    for name, decode in (("json (stdlib)", json.loads), ("orjson", orjson.loads),
                         ("msgspec, dicts", msgspec.json.decode),
                         ("msgspec, typed structs", _DECODER.decode)):
        times = []
        for _ in range(3):
            started = time.perf_counter()
            decoded = decode(raw)
            times.append(time.perf_counter() - started)
            del decoded
            gc.collect()
        tracemalloc.start()
        decoded = decode(raw)
        retained = tracemalloc.get_traced_memory()[0] / 1e6
        tracemalloc.stop()
        del decoded
        gc.collect()
        rows.append((name, min(times), retained))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    args = parser.parse_args()
    files = sorted(p for p in args.traces.iterdir() if p.name.endswith((".json", ".json.gz")))
    if not files:
        print(f"no traces in {args.traces}")
        return 2
    print("| trace | MB (gz) | HTA s | HTA peak MB | collscope s | collscope peak MB | "
          "speed-up | HTA overlap % | collscope overlap % |")
    print("|---|---|---|---|---|---|---|---|---|")
    totals = {"hta": 0.0, "collscope": 0.0}
    worst_gap = 0.0
    imports: dict[str, list[float]] = {"hta": [], "collscope": []}
    for path in files:
        hta, ours = run_child("hta", [path]), run_child("collscope", [path])
        for tool, result in (("hta", hta), ("collscope", ours)):
            imports[tool].append(result["import_s"])
        if hta["error"] is None:
            totals["hta"] += hta["work_s"]
            totals["collscope"] += ours["work_s"]
        hta_figure = hta["error"] is None and not math.isnan(hta["overlap"])  # NaN: no comm
        hta_overlap = ("fails: " + hta["error"]) if hta["error"] else (
            f"{hta['overlap']:.2f}" if hta_figure else "n/a")
        ours_overlap = "n/a" if ours["overlap"] is None else f"{ours['overlap']:.2f}"
        if hta_figure and ours["overlap"] is not None:
            worst_gap = max(worst_gap, abs(hta["overlap"] - ours["overlap"]))
        speedup = "-" if hta["error"] else f"{hta['work_s'] / ours['work_s']:.1f}x"
        print(f"| {path.name} | {path.stat().st_size / 1e6:.2f} | "
              f"{'-' if hta['error'] else format(hta['work_s'], '.2f')} | "
              f"{hta['tree_peak_mb']:.0f} | "
              f"{ours['work_s']:.2f} | {ours['tree_peak_mb']:.0f} | {speedup} | {hta_overlap} | "
              f"{ours_overlap} |")
    print(f"\ntotal over the traces HTA reads: HTA {totals['hta']:.2f} s, collscope "
          f"{totals['collscope']:.2f} s: {totals['hta'] / totals['collscope']:.1f}x faster")
    print(f"imports (median, s): HTA {sorted(imports['hta'])[len(files) // 2]:.2f}, collscope "
          f"{sorted(imports['collscope'])[len(files) // 2]:.2f}")
    print(f"largest overlap difference where HTA gives a figure: {worst_gap:.2f} points")
    largest = max(files, key=lambda p: p.stat().st_size)
    print(f"\nJSON decoders on {largest.name} (best of 3; MB held by the decoded result):")
    print("| decoder | s | MB |\n|---|---|---|")
    for name, seconds, retained in decoders(largest):
        print(f"| {name} | {seconds:.3f} | {retained:.0f} |")
    return 1 if worst_gap > 1.0 else 0


if __name__ == "__main__":
    sys.exit(main())
