"""The sampler: reads every source on a fixed schedule in a background thread.

Timing method (what every number means): a baseline reading is taken at ``start()``; then every
``interval`` seconds (on a fixed schedule, so the period does not drift by the cost of reading)
each source is read once. Gauges are the value at that instant (CPU % is the busy share of
``psutil.cpu_times()`` since the previous read, i.e. over the interval); rates are counter
deltas divided by the monotonic time between the two reads of that counter. ``stop()`` takes
one last reading so that the tail of a run is not lost. A reading that takes longer than the
interval makes the sampler skip to the next tick rather than fall behind.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from collscope.monitor.rates import RateTracker
from collscope.monitor.sources import Reading, Source
from collscope.monitor.summary import Summary, SummaryBuilder
from collscope.records.sample import SampleRecord

Sink = Callable[[SampleRecord], None]
# A final reading closer than this to the previous one would give noisy rates; skip it.
MIN_FINAL_INTERVAL_S = 0.05


def default_sources(rdma_root: str | None = None, gpu_backend: Any = None) -> list[Source]:
    """Host CPU/memory, every NIC, every RDMA port, and the GPUs when a backend sees any."""
    from collscope.monitor.sources import GpuSource, HostSource, NetSource, RdmaSource

    sources: list[Source] = [HostSource(), NetSource()]
    sources.append(RdmaSource() if rdma_root is None else RdmaSource(rdma_root))
    if gpu_backend is not None and gpu_backend.name != "none":
        sources.append(GpuSource(gpu_backend))
    return sources


class Sampler:
    """Samples ``sources`` every ``interval`` seconds and hands each record to ``sinks``.

    Use as a context manager in a training script::

        from collscope.monitor import Sampler

        with Sampler(interval=1.0, sinks=[records.append]) as sampler:
            train()
        print(sampler.summary().to_dict())

    With no ``sources`` it uses ``default_sources()`` (GPUs through ``collscope.hw``). Sinks are
    callables; they run on the sampler thread, so they should be quick. A source that raises is
    skipped for that sample and its first error is kept in ``errors``.
    """

    def __init__(self, interval: float = 1.0, sources: Iterable[Source] | None = None,
                 sinks: Iterable[Sink] = (), host: str | None = None,
                 duration: float | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        if duration is not None and not duration > 0:
            raise ValueError(f"duration must be > 0 seconds, got {duration!r}")
        self.interval = float(interval)
        self.duration = duration
        self.sources: list[Source] = list(sources) if sources is not None else \
            default_sources(gpu_backend=_detect_gpu())
        self.sinks: list[Sink] = list(sinks)
        self.host = host or socket.gethostname()
        self.errors: dict[str, str] = {}
        self.latest: SampleRecord | None = None
        self.started_at: float | None = None     # wall clock of the baseline reading
        self._clock = clock
        self._wall = wall_clock
        self._rates = RateTracker()
        self._summary = SummaryBuilder()
        self._started_mono: float | None = None
        self._last_mono: float | None = None
        self._stop = threading.Event()
        self.finished = threading.Event()   # set when ``duration`` has been sampled
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- one sample -------------------------------------------------------------------------
    def _read_all(self) -> tuple[float, float, dict[str, float]]:
        metrics: dict[str, float] = {}
        wall = self._wall()
        mono = self._clock()
        for source in self.sources:
            now = self._clock()
            try:
                reading: Reading = source.read()
            except Exception as error:  # one broken source must not stop the others
                self.errors.setdefault(source.name, f"{type(error).__name__}: {error}")
                continue
            metrics.update(reading.gauges)
            metrics.update(self._rates.update(reading.counters, now))
        return wall, mono, metrics

    def baseline(self) -> None:
        """Read every source once to set the counters' starting points (emits nothing)."""
        with self._lock:
            wall, mono, _ = self._read_all()
            self.started_at, self._started_mono, self._last_mono = wall, mono, mono

    def sample_once(self) -> SampleRecord:
        """Read every source now, emit the record to the sinks and return it."""
        with self._lock:
            if self._started_mono is None:
                raise RuntimeError("call baseline() (or start()) before sample_once()")
            wall, mono, metrics = self._read_all()
            assert self._last_mono is not None          # set by baseline()
            covered = mono - self._last_mono            # the seconds this sample covers
            self._last_mono = mono
            record = SampleRecord(ts=round(wall, 6), host=self.host,
                                  metrics={k: _round(v) for k, v in sorted(metrics.items())})
            self.latest = record
            self._summary.add(record, seconds=covered)
        for sink in self.sinks:
            try:
                sink(record)
            except Exception as error:
                self.errors.setdefault(f"sink {sink!r}", f"{type(error).__name__}: {error}")
        return record

    # -- the background loop ------------------------------------------------------------------
    def start(self) -> Sampler:
        """Start sampling in a daemon thread (after a baseline reading, unless one was taken)."""
        if self._thread is not None:
            raise RuntimeError("sampler already started")
        if self._started_mono is None:
            self.baseline()
        self._thread = threading.Thread(target=self._run, name="collscope-sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        assert self._started_mono is not None
        end = None if self.duration is None else self._started_mono + self.duration
        tick = 1
        while True:
            due = self._started_mono + tick * self.interval
            last = end is not None and due >= end - 1e-6
            if end is not None and last:
                due = end
            if self._stop.wait(max(0.0, due - self._clock())):
                return
            self.sample_once()
            if last:
                self.finished.set()
                return
            # Skip ticks already past (a slow source), so the schedule does not pile up.
            elapsed = self._clock() - self._started_mono
            tick = max(tick + 1, int(elapsed / self.interval) + 1)

    def stop(self) -> None:
        """Stop the thread and take a final sample (unless one was taken just now)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join()
        if not self.finished.is_set() and self._last_mono is not None and \
                self._clock() - self._last_mono >= MIN_FINAL_INTERVAL_S:
            self.sample_once()

    def close(self) -> None:
        """Stop, then release sources that hold resources (GPU libraries)."""
        self.stop()
        for source in self.sources:
            close = getattr(source, "close", None)
            if close is not None:
                try:
                    close()
                except Exception as error:
                    sys.stderr.write(f"collscope monitor: closing {source.name}: {error}\n")

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- results ------------------------------------------------------------------------------
    @property
    def elapsed_s(self) -> float:
        """Seconds from the baseline reading to the last sample."""
        if self._started_mono is None or self._last_mono is None:
            return 0.0
        return self._last_mono - self._started_mono

    @property
    def bytes_moved(self) -> dict[str, float]:
        """Bytes per byte counter since the baseline (``net.eth0.rx_bytes``, ...)."""
        return {name: total for name, total in sorted(self._rates.totals.items())
                if name.endswith("_bytes")}

    def summary(self, **context: Any) -> Summary:
        """Mean and peak per metric and bytes moved; ``context`` adds fields (command, ...)."""
        with self._lock:
                return self._summary.build(host=self.host, interval_s=self.interval,
                                       started_at=self.started_at,
                                       duration_s=self.elapsed_s,
                                       bytes_moved=self.bytes_moved, **context)


def _round(value: float) -> float:
    """Three decimals: plenty for %, W and bytes/s, and it keeps JSON Lines files small."""
    return round(value, 3)


def _detect_gpu() -> Any:
    from collscope.hw import detect_backend

    return detect_backend()
