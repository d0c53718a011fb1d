"""nccl-tests' JSON output (``-J FILE``, nccl-tests 2.18+, file version 3), written by bench.

Structure and formatting follow the writer in NVIDIA/nccl-tests ``src/util.cu`` (version 3,
read through a code search; its per-iteration blocks are those ``-I 1`` adds):

    {"version":3, "start_time":"%Y-%m-%d %H:%M:%S", "args":[argv], "env":["K=V", ...],
     "nccl_version":<NCCL_VERSION_CODE int, 0 without NCCL>,
     "config":{"nthreads","ngpus","minimum_bytes","maximum_bytes","step_factor"|"step_bytes",
               "warmup_iters","iterations","aggregated_iterations","validation","graph",
               "blocking_collectives","per_iter_timing","per_iter_skip","parallel_init",
               "devices":[{"rank","group","pid","hostname","device","device_hex",
                           "device_info"}]},
     "results":[{"size","count","type","redop","root":"%6i string",
                 "out_of_place":{"time","alg_bw","bus_bw","nwrong"} | null,
                 "out_of_place_per_iter":{"skipped_iterations","min_us","max_us","avg_us",
                     "p50_us","p95_us","p99_us","stdev_us","cv_pct","times_us":[iter],
                     "per_process_max_times_us":[[iter] per process]},
                 "in_place":{...}, "in_place_per_iter":{...},
                 "actual_iterations", "experiment_name":""}],
     "out_of_bounds":{"count","okay"}, "average_bus_bandwidth":{"bandwidth","okay"},
     "errors":[], "end_time":"...", "collscope_args":[argv] (collscope's own)}

Quirks kept as util.cu has them: booleans are the strings "true"/"false"; doubles are printed
with ``%lf`` (six decimals) and NaN as the string "nan"; ``nwrong`` is a double (null when not
verified); ``root`` is the right-aligned string of the text table; ``times_us`` is, per
iteration, the maximum over process rows, and ``per_process_max_times_us`` is each process's
own per-iteration times (a collscope process drives one rank, so its own times); the summary
statistics are over ``times_us`` with a population standard deviation. nccl-tests never
overwrites: an existing FILE makes it try FILE.0, FILE.1, ... (one file per collective here,
as one nccl-tests binary writes one).

The file names no collective: readers (nccl-tests' own, collscope import) take it from the
program name, ``args[0]``. So ``args`` is what the nccl-tests binary of that collective would
have been given for the same sweep (``all_reduce_perf -b 65536 -e 131072 -f 2 -n 3 ...``),
and collscope's real command line goes into the extra ``collscope_args``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from typing import Any

from collscope.bench.output import wrong_total
from collscope.bench.per_rank import iteration_max
from collscope.collectives.table import COLLECTIVES
from collscope.records.bench import BenchResult
from collscope.stats.summary import iter_stats, percentile_index

FILE_VERSION = 3
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def flag(value: bool) -> str:
    return "true" if value else "false"


def nccl_version_code(version: str | None) -> int:
    """NCCL_VERSION_CODE of "2.27.3" (major*10000 + minor*100 + patch); 0 when unknown."""
    parts = (version or "").split(".")
    if len(parts) < 3 or not all(p.isdigit() for p in parts[:3]):
        return 0
    major, minor, patch = (int(p) for p in parts[:3])
    return major * 10000 + minor * 100 + patch


def per_iter_block(times_us: Sequence[float],
                   per_process_us: Sequence[Sequence[float]]) -> dict[str, Any]:
    """util.cu's writePerIterReport block for one placement."""
    ordered = sorted(times_us)
    n = len(ordered)
    stats = iter_stats(ordered)
    avg = stats.mean
    stdev = math.sqrt(sum((t - avg) ** 2 for t in ordered) / n)
    block: dict[str, Any] = {
        "skipped_iterations": 0, "min_us": stats.min, "max_us": stats.max, "avg_us": avg,
        "p50_us": stats.p50, "p95_us": stats.p95,
        "p99_us": ordered[percentile_index(n, 99)], "stdev_us": stdev,
        "cv_pct": stdev / avg * 100.0 if avg > 0 else 0.0, "times_us": list(times_us)}
    if len(per_process_us) > 1:
        block["per_process_max_times_us"] = [list(t[:n]) for t in per_process_us]
    return block


def _placement(result: BenchResult) -> dict[str, Any]:
    return {"time": result.time_us, "alg_bw": result.algbw_gbs, "bus_bw": result.busbw_gbs,
            "nwrong": None if result.wrong is None else float(result.wrong)}


def result_entry(out_of_place: BenchResult | None, in_place: BenchResult | None) -> dict[str, Any]:
    first = out_of_place or in_place
    assert first is not None
    entry: dict[str, Any] = {"size": first.size_bytes, "count": first.count,
                             "type": first.dtype, "redop": first.op,
                             "root": f"{first.root:6d}"}
    kept = first.iters
    for key, result in (("out_of_place", out_of_place), ("in_place", in_place)):
        if result is None:
            if key == "out_of_place":
                entry[key] = None          # writeBenchMarkLineNullBody
            continue
        entry[key] = _placement(result)
        if result.rank_times_us:
            times = iteration_max(result.rank_times_us)
            if times:
                entry[f"{key}_per_iter"] = per_iter_block(times, result.rank_times_us)
                kept = len(times)
    # The iterations the per-iteration blocks hold: all of them with fixed -n; in adaptive mode
    # (--target-precision) every rank keeps only the last -n, so the count kept, not the count
    # run (the records' ``iters``, which ``time`` is the mean over).
    entry["actual_iterations"] = kept
    entry["experiment_name"] = ""
    return entry


def program_args(results: Sequence[BenchResult], config: Any) -> list[str]:
    """The argv of the nccl-tests binary running this sweep: its program name (the one
    field that tells the collective) and the flags collscope bench shares with nccl-tests."""
    first = results[0]
    spec = COLLECTIVES.get(first.collective)
    args = [f"{first.collective}_perf", "-b", str(config.min_bytes),
            "-e", str(max((r.size_bytes for r in results), default=config.min_bytes))]
    args += (["-i", str(config.step_bytes)] if config.step_bytes
             else ["-f", str(config.step_factor)])
    args += ["-n", str(config.iters), "-w", str(config.warmup_iters), "-c", str(config.check),
             "-z", str(int(config.blocking)), "-a", str(config.average), "-I", "1"]
    dtypes = sorted({r.dtype for r in results})
    ops = sorted({r.op for r in results})
    if len(dtypes) == 1:            # nccl-tests takes one type (or all): several say nothing
        args += ["-d", dtypes[0]]
    if spec is not None and spec.reduces and len(ops) == 1:
        args += ["-o", ops[0]]
    if spec is not None and spec.rooted:
        args += ["-r", str(config.root)]
    return args


def document(results: Sequence[BenchResult], config: Any,
             devices: Sequence[dict[str, Any]], argv: Sequence[str],
             env: dict[str, str], nccl_version: str | None,
             started: float, ended: float) -> dict[str, Any]:
    """The whole -J document of one collective's sweep (``results`` in sweep order); one
    document per collective, as one nccl-tests binary writes one."""
    rows: dict[tuple[int, str, str], dict[bool, BenchResult]] = {}
    for result in results:
        rows.setdefault((result.size_bytes, result.dtype, result.op), {})[result.in_place] = result
    sizes = [r.size_bytes for r in results]
    wrong = wrong_total(results)
    doc: dict[str, Any] = {
        "version": FILE_VERSION,
        "start_time": time.strftime(TIME_FORMAT, time.localtime(started)),
        "args": program_args(results, config) if results else list(argv),
        "env": [f"{k}={v}" for k, v in env.items()],
        "nccl_version": nccl_version_code(nccl_version),
        "config": {
            "nthreads": 1, "ngpus": 1, "minimum_bytes": config.min_bytes,
            "maximum_bytes": max(sizes, default=config.min_bytes),
            **({"step_bytes": config.step_bytes} if config.step_bytes
               else {"step_factor": config.step_factor}),
            "warmup_iters": config.warmup_iters, "iterations": config.iters,
            "aggregated_iterations": 1, "validation": config.check, "graph": 0,
            "blocking_collectives": flag(config.blocking), "per_iter_timing": flag(True),
            "per_iter_skip": 0, "parallel_init": flag(False),
            "devices": [{"rank": d["rank"], "group": 0, "pid": d["pid"], "hostname": d["host"],
                         "device": -1 if d["device"] is None else d["device"],
                         "device_hex": d["device_type"], "device_info": d["name"]}
                        for d in devices]},
        "results": [result_entry(row.get(False), row.get(True)) for row in rows.values()],
        # Nothing verified (-c 0): no count and "unchecked", as average_bus_bandwidth says it.
        "out_of_bounds": {"count": wrong, "okay": "unchecked" if wrong is None
                          else flag(wrong == 0)},
        "average_bus_bandwidth": {
            "bandwidth": sum(r.busbw_gbs for r in results) / len(results) if results else 0.0,
            "okay": "unchecked"},
        "errors": [],
        "end_time": time.strftime(TIME_FORMAT, time.localtime(ended)),
        "collscope_args": list(argv),      # not util.cu's: collscope's own command line
    }
    return doc


def dumps(value: Any) -> str:
    """JSON text as util.cu prints it: no spaces, doubles with %lf, NaN as "nan"."""
    if value is None:
        return "null"
    if isinstance(value, bool):        # never produced by document(); kept strict
        return flag(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return '"nan"' if math.isnan(value) else f"{value:f}"
    if isinstance(value, str):
        return '"' + _escape(value) + '"'
    if isinstance(value, dict):
        return "{" + ",".join(f'"{_escape(k)}":{dumps(v)}' for k, v in value.items()) + "}"
    return "[" + ",".join(dumps(v) for v in value) + "]"


def _escape(text: str) -> str:
    """util.cu's sanitizeJson: escape " \\ / tab newline; it stops at other control or
    non-ASCII characters, which are dropped here instead so the document stays valid."""
    out = []
    for char in text:
        if char in '"\\/':
            out.append("\\" + char)
        elif char == "\t":
            out.append("\\t")
        elif char == "\n":
            out.append("\\n")
        elif 0x1F < ord(char) < 0x7F:
            out.append(char)
    return "".join(out)


def open_new(path: str) -> tuple[Any, str]:
    """Open FILE for writing without overwriting: FILE, else FILE.0, FILE.1, ... (util.cu)."""
    candidate, tries = path, 0
    while True:
        try:
            return open(candidate, "x", encoding="ascii"), candidate  # noqa: SIM115
        except FileExistsError:
            candidate = f"{path}.{tries}"
            tries += 1


def write(path: str, doc: dict[str, Any]) -> str:
    """Write ``doc`` to a new file at ``path`` (or its first free .N); the path written."""
    handle, written = open_new(path)
    with handle:
        handle.write(dumps(doc))
        handle.flush()
        os.fsync(handle.fileno())
    return written
