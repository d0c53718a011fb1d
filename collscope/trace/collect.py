"""What the rank analysis keeps of a trace's events (pure), gathered batch by batch so that a
streamed trace never holds all its events at once (:mod:`stream`).

Kept: the ProfilerStep spans, the first and last times, and per kind of trace what its
analysis reads. GPU traces: per GPU kernel / copy / set a small tuple (its launch's correlation,
kind, interval, stream; the event itself for communication kernels), per runtime event its
(ts, pid, tid) by correlation, and the CPU spans that name collectives. CPU-only traces
(gloo): the backend's spans, the c10d ops, and the CPU ops' busy time per thread as interval
unions, compacted as they grow. The CPU part is dropped at the first GPU event (a trace with
GPU events is analysed by its kernels). Only complete events ("X") with a name and a numeric
time count, as before streaming.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from collscope.trace import intervals as iv
from collscope.trace.calls import to_int
from collscope.trace.events import Event
from collscope.trace.kernels import is_comm_annotation, kernel_kind

RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "hip_runtime", "runtime", "driver"})
GPU_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
CPU_SPAN_CATS = frozenset({"user_annotation", "cpu_op"})
BACKEND_PREFIXES = ("gloo:", "mpi:", "ucc:", "nccl:", "rccl:")
NO_LAUNCH = object()         # a kernel without args: it has no launch to look up
_NUMBER = (int, float)


class _Union:
    """An interval union that takes intervals one at a time and merges them every so often
    (the union of unions is the union: the same intervals as merging them all at the end)."""

    def __init__(self) -> None:
        self.merged: list[iv.Interval] = []
        self.pending: list[iv.Interval] = []

    def add(self, interval: iv.Interval) -> None:
        self.pending.append(interval)
        if len(self.pending) > max(1 << 16, len(self.merged)):
            self.merged = iv.union(self.merged + self.pending)
            self.pending = []

    def result(self) -> list[iv.Interval]:
        return iv.union(self.merged + self.pending)


@dataclass(slots=True)
class Kernel:
    """A GPU kernel, copy or set, as the GPU analysis reads it."""

    launch_key: Any                   # its correlation (to_int), NO_LAUNCH without args
    kind: str                         # comm, compute, other, memory
    start: float
    end: float
    event: Event | None               # communication kernels: the event, for its metadata


@dataclass
class CpuEvents:
    """What a CPU-only (gloo) trace's analysis reads."""

    comm_spans: list[Event] = field(default_factory=list)     # the backend's spans
    c10d_ops: list[Event] = field(default_factory=list)
    issue: _Union = field(default_factory=_Union)    # record_param_comms and c10d ops
    busy_by_thread: dict[tuple[Any, Any], _Union] = field(
        default_factory=lambda: defaultdict(_Union))         # CPU ops


@dataclass
class RankEvents:
    steps: list[tuple[int, float, float]] = field(default_factory=list)  # number, start, end
    first_ts: float | None = None
    last_ts: float | None = None
    kernels: list[Kernel] = field(default_factory=list)
    stream_kinds: dict[Any, set[str]] = field(default_factory=lambda: defaultdict(set))
    launches: dict[Any, tuple[float, Any, Any]] = field(default_factory=dict)
    comm_annotations: list[Event] = field(default_factory=list)   # around kernel launches
    cpu: CpuEvents | None = field(default_factory=CpuEvents)      # None: a GPU trace

    @property
    def on_gpu(self) -> bool:
        return self.cpu is None

    def add(self, events: list[Event]) -> None:
        for event in events:
            name, ts, dur = event.name, event.ts, event.dur
            if event.ph != "X" or type(name) is not str or type(ts) not in _NUMBER or (
                    dur is not None and type(dur) not in _NUMBER):
                continue
            end = ts + (dur or 0.0)
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            if self.last_ts is None or end > self.last_ts:
                self.last_ts = end
            cat = event.cat
            if cat in GPU_CATS:
                self._gpu_event(event, cat, name, ts, end)
            elif cat in RUNTIME_CATS:
                if event.args is not None:
                    self.launches[to_int(event.args.correlation)] = (ts, event.pid, event.tid)
            elif cat in CPU_SPAN_CATS:
                self._cpu_span(event, cat, name, ts, end)
            if self.cpu is not None and (name == "record_param_comms"
                                         or name.startswith("c10d::")):
                self.cpu.issue.add((ts, end))
                if name.startswith("c10d::"):
                    self.cpu.c10d_ops.append(event)

    def _gpu_event(self, event: Event, cat: str, name: str, ts: float, end: float) -> None:
        self.cpu = None
        args = event.args
        kind = kernel_kind(name) if cat == "kernel" else "memory"
        self.stream_kinds[to_int(args.stream) if args is not None else None].add(kind)
        self.kernels.append(Kernel(to_int(args.correlation) if args is not None else NO_LAUNCH,
                                   kind, ts, end, event if kind == "comm" else None))

    def _cpu_span(self, event: Event, cat: str, name: str, ts: float, end: float) -> None:
        if name.startswith("ProfilerStep#"):
            # CPU-side spans only: Kineto may mirror them on the GPU timeline
            # (gpu_user_annotation), which would count every step twice.
            number = to_int(name.removeprefix("ProfilerStep#"))
            if number is not None:
                self.steps.append((number, ts, end))
        comm = is_comm_annotation(name)
        if comm or name == "record_param_comms":
            self.comm_annotations.append(event)
        cpu = self.cpu
        if cpu is None:
            return
        if comm and name.startswith(BACKEND_PREFIXES):
            cpu.comm_spans.append(event)
        if cat == "cpu_op":
            cpu.busy_by_thread[(event.pid, event.tid)].add((ts, end))
