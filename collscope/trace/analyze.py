"""`collscope trace` as a library: files -> per-rank analyses (in parallel) -> the job's tables,
cross-rank lateness, efficiency against a baseline, findings, records."""

from __future__ import annotations

import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collscope.records.finding import FindingRecord
from collscope.records.trace import TraceCollectiveRecord, TraceRankRecord, TraceStepRecord
from collscope.runtime.gc_pause import gc_paused
from collscope.trace.across import Across, match
from collscope.trace.baseline import Baseline
from collscope.trace.collect import RankEvents
from collscope.trace.config import (  # noqa: F401
    DEFAULT_MEMORY_MIB,
    StepSelection,
    TraceConfig,
    parse_steps,
)
from collscope.trace.events import TraceInputError, load_trace
from collscope.trace.findings import findings
from collscope.trace.rank import RankTrace, analyse_events
from collscope.trace.stream import NotStreamable, stream_events
from collscope.trace.table import collective_rows, pooled_rows, rank_window_calls

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
def trace_files(paths: list[str]) -> list[Path]:
    """The trace files named, folders expanded to their .json / .json.gz files (one per rank)."""
    files: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found = sorted(p for p in path.iterdir()
                           if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
            if not found:
                nested = sorted({p.parent.name for p in path.glob("*/*")
                                 if p.name.endswith(TRACE_SUFFIXES)})
                hint = (f"; its sub-folders {', '.join(nested)} hold traces (one job each, e.g. "
                        "a train sweep's configurations): give one of them" if nested else "")
                raise TraceInputError(f"{path}: no .json or .json.gz trace files in this "
                                      f"folder{hint}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise TraceInputError(f"{path}: no such file or folder; expected a trace "
                                  "(.json / .json.gz) or a folder of them")
    return files


def rank_from_name(path: Path) -> int | None:
    found = _RANK_IN_NAME.search(path.name)
    return int(found.group(1)) if found else None


# Parallel reading from this much JSON on (gzip counted at its usual ~10x ratio).
PARALLEL_MIN_BYTES = 64 << 20
# What reading one rank holds at its peak, streamed (benchmarks/trace_scale.py: 16, 100 and
# 300 MB of JSON peak at 118, 171 and 238 MiB in one process, imports included): the base,
# plus a share of the trace's JSON size (what is kept of its kernels, launches and calls).
WORKER_BASE_MIB = 150
WORKER_MIB_PER_JSON_MIB = 0.35
MAIN_BASE_MIB = 100          # the main process beside its workers: imports, the ranks' results


def _json_bytes(path: Path) -> int:
    size = path.stat().st_size
    return size * 10 if path.name.endswith(".gz") else size


def reading_workers(files: list[Path], memory_mib: int) -> int:
    """How many processes read the ranks at once: as many as the memory budget holds at the
    largest trace's estimated peak, at most one per core and per file; 1 (read in this
    process, one rank after another) for small jobs, where a worker costs more than it saves
    (~0.1 s to start and ship back: 4 traces of 4 MB read faster in one process)."""
    sizes = [_json_bytes(f) for f in files]
    if len(files) < 2 or sum(sizes) < PARALLEL_MIN_BYTES:
        return 1
    per_worker = WORKER_BASE_MIB + WORKER_MIB_PER_JSON_MIB * max(sizes) / 2**20
    fit = int((memory_mib - MAIN_BASE_MIB) // per_worker)
    return max(1, min(len(files), os.cpu_count() or 1, fit))


def read_rank(path: str, selection: StepSelection) -> RankTrace:
    """One rank's analysis, the trace streamed (:mod:`stream`); a file the stream cannot cut
    is read whole, which decodes it or names what is wrong with it. Runs in a worker process
    (only the summary travels back)."""
    with gc_paused():
        collected = RankEvents()
        try:
            outside = stream_events(Path(path), collected.add)
        except NotStreamable:
            outside = load_trace(path)
            collected = RankEvents()
            collected.add(outside.traceEvents)
        return analyse_events(collected, outside, path, rank_from_name(Path(path)), selection)



def read_ranks(files: list[Path], selection: StepSelection, workers: int | None = None,
               memory_mib: int = DEFAULT_MEMORY_MIB) -> list[RankTrace]:
    """Every file's analysis. Several files are read by worker processes (decoding is
    CPU-bound), as many as ``memory_mib`` holds (:func:`reading_workers`) unless ``workers``
    says; each worker streams one trace at a time, so memory stays bounded by the workers."""
    count = workers if workers is not None else reading_workers(files, memory_mib)
    if count <= 1 or len(files) == 1:
        return [read_rank(str(f), selection) for f in files]
    with ProcessPoolExecutor(max_workers=count) as pool:
        return list(pool.map(read_rank, [str(f) for f in files], [selection] * len(files)))


# What RankTrace.job holds, in order (rank._job_key).
JOB_FIELDS = ("world size", "backend", "process groups")


def check_one_job(traces: list[RankTrace]) -> None:
    """Traces of several ranks must come from one job: same world and groups, distinct ranks
    (overlapping in time: :func:`check_overlap`, once the clocks are aligned)."""
    first = traces[0]
    seen: dict[int, str] = {}
    for trace in traces:
        if trace.job != first.job:
            name, theirs, ours = next((name, a, b) for name, a, b in
                                      zip(JOB_FIELDS, trace.job, first.job) if a != b)
            raise TraceInputError(
                f"{trace.path}: a different job than {first.path} ({name} {theirs!r} vs "
                f"{ours!r}); give the traces of one job")
        if trace.rank in seen:
            raise TraceInputError(f"{trace.path}: rank {trace.rank} again (also "
                                  f"{seen[trace.rank]}); give one trace per rank of one job")
        seen[trace.rank] = trace.path
        if trace.world_size is not None and trace.rank >= trace.world_size:
            raise TraceInputError(f"{trace.path}: rank {trace.rank} is outside its world size "
                                  f"{trace.world_size}")


def check_overlap(traces: list[RankTrace], across: Across | None) -> None:
    """The ranks' traces overlap in time, on aligned clocks where the offsets were applied
    (hosts seconds apart need not overlap on their own clocks)."""
    clock = across.clock if across is not None else None

    def aligned(rank: int, at_us: float) -> float:
        return clock.aligned_us(rank, at_us) if clock is not None else at_us

    first = traces[0]
    low, high = aligned(first.rank, first.first_ts), aligned(first.rank, first.last_ts)
    for trace in traces[1:]:
        if aligned(trace.rank, trace.last_ts) < low or aligned(trace.rank, trace.first_ts) > high:
            hint = ("" if clock is not None and clock.applied else
                    " (or of hosts whose clocks are that far apart: --clock-align on)")
            raise TraceInputError(f"{trace.path}: its events do not overlap in time with "
                                  f"{first.path}'s; traces of different jobs or runs{hint}")


@dataclass
class TraceResult:
    traces: list[RankTrace]
    collectives: list[TraceCollectiveRecord]
    across: Across | None
    findings: list[FindingRecord]
    baseline: Baseline | None

    @property
    def has_comm(self) -> bool:
        return any(t.calls for t in self.traces)

    def rank_records(self) -> list[TraceRankRecord]:
        lateness = {r.rank: r for r in self.across.ranks} if self.across else {}
        clock = self.across.clock if self.across else None
        offsets = {o.rank: o for o in clock.offsets} if clock else {}
        records = []
        for t in self.traces:
            late = lateness.get(t.rank)
            offset = offsets.get(t.rank)
            by_call = ([(m.starts_us[t.rank] - min(m.starts_us.values())) / 1e3
                        for m in self.across.matched] if self.across else [])
            records.append(TraceRankRecord(
                rank=t.rank, path=t.path, timing=t.timing, window=t.window,
                comm_kernel_ms=t.comm_ms, compute_kernel_ms=t.compute_ms,
                exposed_comm_ms=t.exposed_comm_ms, overlap_percent=t.overlap_percent,
                late_calls=late.late_calls if late else 0,
                wait_caused_ms=late.wait_caused_ms if late else 0.0,
                calls=len(rank_window_calls(t)), late_steps=late.late_steps if late else 0,
                late_by_call=by_call,
                clock_offset_us=offset.offset_us if offset else None,
                clock_offset_ci_us=[offset.ci_low_us, offset.ci_high_us] if offset else [],
                clock_spread_us=offset.spread_us if offset else None,
                clock_calls=offset.calls if offset else 0,
                clock_drift_ppm=offset.drift_ppm if offset else None,
                clock_drift_ci_ppm=offset.drift_ci_ppm if offset else [],
                clock_drift_applied=offset.drift_applied if offset else False))
        return records

    def step_records(self) -> list[TraceStepRecord]:
        return [s for t in self.traces for s in t.steps]

    def records(self) -> list[dict[str, Any]]:
        """trace_collective, trace_step, trace_rank, finding records (after the run record)."""
        return ([r.to_dict() for r in self.collectives]
                + [r.to_dict() for r in self.step_records()]
                + [r.to_dict() for r in self.rank_records()]
                + [f.to_dict() for f in self.findings])


def analyse(config: TraceConfig) -> TraceResult:
    from collscope.trace.baseline import load_baseline

    baseline = load_baseline(config.baseline) if config.baseline else None
    traces = sorted(read_ranks(trace_files(config.paths), config.steps, config.workers,
                               config.memory_mib), key=lambda t: t.rank)
    check_one_job(traces)
    rows = [row for t in traces for row in collective_rows(t)]
    if baseline is not None:
        for row in rows:
            baseline.apply(row)
    across = (match(traces, config.clock_align) if len(traces) > 1
              and any(t.calls for t in traces) else None)
    check_overlap(traces, across)
    result = TraceResult(traces, rows, across, [], baseline)
    # Collective rules judge the pooled table: one finding per collective, not one per rank.
    result.findings = findings(traces, pooled_rows(result), across)
    return result
