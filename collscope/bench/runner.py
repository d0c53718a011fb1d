"""The sweep: for each collective x dtype x op x size x placement, time, verify, aggregate.

Timing method
-------------
GPU: CUDA/HIP events recorded between back-to-back launches on the current stream (one event
per iteration boundary), so per-iteration times come from the device; the loop time is the
first event to the last. With -z each op gets its own start and end event and is waited for
(event.synchronize(), never a sleep) before the next launch, so host wake-up and launch time
stay out of every interval; the loop time is the sum of the ops' times. Before a start event
the stream is held by a short device spin, so the op is already queued when the device
reaches the event. CPU (gloo): time.perf_counter() around each completed operation.
``time_us`` = loop time / iterations (nccl-tests' "time"); p50/p95/min/max are over the
per-iteration times. Each rank measures its own; ranks are combined by -a (default: mean).
Warm-up iterations and a barrier precede every timed loop; buffers are allocated once per size
outside it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from collscope.bench import per_rank
from collscope.bench.config import DEFAULT_MAX_BYTES_CPU, DEFAULT_MAX_BYTES_GPU, BenchConfig
from collscope.collectives import ops
from collscope.collectives.dtypes import DTYPES
from collscope.collectives.table import COLLECTIVES, bandwidths
from collscope.records.bench import BenchResult
from collscope.runtime.dist import Session
from collscope.runtime.guard import guard
from collscope.stats.intervals import median_ci_halfwidth
from collscope.stats.summary import iter_stats
from collscope.testing import faults
from collscope.units import format_size


def timing_method(session: Session, config: BenchConfig) -> str:
    if session.device.type == "cuda":
        how = ("device events around each op, waited for before the next launch (-z: each "
               "time is that op's device time alone)" if config.blocking
               else "device events between back-to-back launches")
    else:
        how = "perf_counter around each completed op"
    algo = (f" hierarchical all_reduce in {format_size(config.hier_chunk_bytes)} chunks (intra-"
            "node reduce-scatter and all-gather of neighbouring chunks overlapping each chunk's "
            "inter-node all-reduce);" if config.algo == "hierarchical" else "")
    loop = (f"adaptive loop (median 95% CI within +-{config.target_precision:g} or "
            f"{config.time_budget_s:g} s per size)" if config.target_precision
            else f"{config.iters}-iteration loop")
    return (f"{how};{algo} time = mean per op over the {loop} after {config.warmup_iters} warm-up "
            f"iterations; p50/p95/min/max over iterations; ranks combined by "
            f"{config.average_name}")


@dataclass
class SizePlan:
    collective: str
    dtype: str
    op: str
    requested_bytes: int
    count: int
    size_bytes: int


def max_bytes_for(config: BenchConfig, session: Session,
                  agree_min: Callable[[int], int]) -> tuple[int, str | None]:
    """The sweep's largest size and, when memory forced it down, the note nccl-tests prints.

    Each rank's budget comes from its own free device memory; ``agree_min`` (a MIN all_reduce
    over the ranks, called on every rank) makes every rank size the same sweep, since ranks
    that planned different sizes would wait on each other's collectives forever."""
    if session.device.type != "cuda":
        return (config.max_bytes or DEFAULT_MAX_BYTES_CPU), None
    wanted = config.max_bytes or DEFAULT_MAX_BYTES_GPU
    free, _total = torch.cuda.mem_get_info(session.device)
    fits = agree_min(buffer_budget(free, bool(config.check)))
    if wanted > fits:
        return fits, f"# Reducing maxBytes to {fits} due to memory limitation"
    return wanted, None


def buffer_budget(free_bytes: int, check: bool) -> int:
    """Largest message whose input and output buffers fit in ``free_bytes`` of device memory,
    leaving 20% for the communicator and, with -c, the check's bounded working memory."""
    usable = int(free_bytes * 0.8) - (ops.CHECK_WORKSPACE_BYTES if check else 0)
    return max(0, usable) // 2


def plans(config: BenchConfig, collective: str, world: int, max_bytes: int) -> list[SizePlan]:
    spec = COLLECTIVES[collective]
    result = []
    for dtype in config.dtypes:
        for op in (config.ops if spec.reduces else ["none"]):
            seen = set()
            for requested in config.sizes(max_bytes):
                count, size = spec.count_and_size(requested, DTYPES[dtype].size, world)
                if count == 0 or size in seen:
                    continue  # too small for one element per rank, or the same as before
                seen.add(size)
                result.append(SizePlan(collective, dtype, op, requested, count, size))
    return result


# Device cycles the stream is held busy before a start event (about 1 ms): the op behind the
# event is launched while the device spins, so the interval starts when the device reaches the
# event, not while the host is still launching the op (10-50 us for a collective).
HOLD_CYCLES = 2_000_000


def hold_stream() -> None:
    """Keep the current stream busy (torch.cuda._sleep, a device spin kernel) so that the next
    start event and the op launched after it are queued together; no-op without _sleep."""
    spin = getattr(torch.cuda, "_sleep", None)
    if spin is not None:
        spin(HOLD_CYCLES)


class Runner:
    def __init__(self, config: BenchConfig, session: Session, own_op_times: bool = False):
        self.config = config
        self.session = session
        # --per-rank: an OpClock wraps every timed launch; without it nothing is added to them.
        self.own_op_times = own_op_times
        self.hang = faults.planted("hang", session.rank)      # test seam; None in real runs
        self.corrupt = faults.planted("corrupt", session.rank)
        self.delay = faults.planted("delay", session.rank)    # a late rank (test seam)
        # Per placement of the current size: (per-iteration times, own op times), seconds.
        self.rank_series: dict[bool, tuple[list[float], list[float]]] = {}
        self.kill = faults.planted("kill", session.rank)
        self.sizes_done = 0
        self.mesh = None
        if config.algo == "hierarchical":
            from collscope.hooks.hierarchical import build_mesh

            with self._guard("hierarchical all-reduce group setup"):
                self.mesh = build_mesh(session.world_size, self.ranks_per_node,
                                       session.device.type)

    @property
    def ranks_per_node(self) -> int:
        return self.config.ranks_per_node or self.session.layout.ranks_per_node

    def _guard(self, what: str) -> AbstractContextManager[None]:
        return guard(self.session, what)

    def _sync(self) -> None:
        if self.session.device.type == "cuda":
            torch.cuda.synchronize(self.session.device)

    def _wait_events(self, events: list[Any]) -> None:
        """Wait for device events in order, telling the watchdog as each one completes, so a
        hung collective is caught one timeout after the previous one finished (the watchdog
        ends the process even while this thread is blocked in the driver)."""
        for event in events:
            event.synchronize()
            self.session.watchdog.beat()

    def _timed_loop(self, launch: Callable[[], None], iters: int) -> tuple[float, list[float]]:
        """(loop seconds, per-iteration seconds) of ``iters`` back-to-back launches.

        Python's garbage collector is paused for the loop (as timeit does), so a collection
        triggered by the harness's own objects never lands inside a measured operation.
        """
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._timed_loop_body(launch, iters)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _timed_loop_body(self, launch: Callable[[], None],
                         iters: int) -> tuple[float, list[float]]:
        if self.session.device.type == "cuda":
            if self.config.blocking:
                return self._blocking_device_loop(launch, iters)
            events = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
            hold_stream()
            events[0].record()
            for i in range(iters):
                launch()
                events[i + 1].record()
            self._wait_events(events)
            per_iter = [events[i].elapsed_time(events[i + 1]) / 1e3 for i in range(iters)]
            return events[0].elapsed_time(events[-1]) / 1e3, per_iter
        beat = self.session.watchdog.beat
        stamps = [time.perf_counter()]
        for _ in range(iters):
            launch()
            stamps.append(time.perf_counter())
            beat()
        return stamps[-1] - stamps[0], [b - a for a, b in zip(stamps, stamps[1:], strict=False)]

    def _blocking_device_loop(self, launch: Callable[[], None],
                              iters: int) -> tuple[float, list[float]]:
        """-z: each op between its own start and end events, and waited for before the next
        launch. The host's wake-up and the next launch fall between one iteration's end event
        and the next one's start, so each time is the device time of that op alone; the loop
        time is their sum."""
        per_iter = []
        for _ in range(iters):
            start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            hold_stream()
            start.record()
            launch()
            end.record()
            self._wait_events([end])
            per_iter.append(start.elapsed_time(end) / 1e3)
        return sum(per_iter), per_iter

    def _reduce_flags(self, values: list[float], op: Any) -> list[float]:
        tensor = torch.tensor(values, dtype=torch.float64, device=self.session.device)
        dist.all_reduce(tensor, op)
        return tensor.tolist()

    def _measure(self, launch: Callable[[], None]) -> tuple[float, list[float], bool]:
        """Fixed iterations, or adaptive batches until every rank's median is precise enough;
        (loop seconds, per-iteration seconds, whether the time budget ended first)."""
        if not self.config.target_precision:
            return (*self._timed_loop(launch, self.config.iters), False)
        total, times = 0.0, []
        started = time.monotonic()
        while True:
            loop, batch = self._timed_loop(launch, self.config.iters)
            total += loop
            times += batch
            # One small all_reduce between batches (outside any timed loop) so that every rank
            # takes the same decision and issues the same number of collectives.
            halfwidth, elapsed = self._reduce_flags(
                [min(median_ci_halfwidth(times), 1e9), time.monotonic() - started],
                dist.ReduceOp.MAX)
            if halfwidth <= self.config.target_precision:
                return total, times, False
            if elapsed >= self.config.time_budget_s:
                return total, times, True

    def agree_min(self, value: int) -> int:
        """The smallest ``value`` over the ranks (a MIN all_reduce; every rank must call it)."""
        return int(self._reduce_flags([float(value)], dist.ReduceOp.MIN)[0])

    def _combine(self, stats: list[float]) -> list[float]:
        """Combine per-rank [mean, p50, p95, min, max] by -a."""
        mode = self.config.average_name
        if mode == "rank0":
            tensor = torch.tensor(stats, dtype=torch.float64, device=self.session.device)
            dist.broadcast(tensor, 0)
            return tensor.tolist()
        if mode == "mean":
            return [v / self.session.world_size for v in self._reduce_flags(stats,
                                                                             dist.ReduceOp.SUM)]
        return self._reduce_flags(stats, dist.ReduceOp.MIN if mode == "min"
                                  else dist.ReduceOp.MAX)

    def run_placement(self, plan: SizePlan, in_place: bool) -> BenchResult:
        session, config = self.session, self.config
        where = (f"{plan.collective} {plan.size_bytes} B {plan.dtype} {plan.op} "
                 f"({'in-place' if in_place else 'out-of-place'})")
        operation = ops.build(plan.collective, plan.dtype, plan.op, config.root, plan.count,
                              in_place, session.rank, session.world_size, session.device)
        if self.mesh is not None:
            from collscope.hooks.hierarchical import HierarchicalAllReduce

            reducer = HierarchicalAllReduce(self.mesh, plan.count, operation.output.dtype,
                                            session.device, config.hier_chunk_bytes)
            buffer, op = operation.output, plan.op

            def hierarchical_launch() -> None:
                reducer(buffer, op)

            operation.launch = hierarchical_launch
        with self._guard(f"warm-up of {where}"):
            for _ in range(config.warmup_iters):
                operation.launch()
                self.session.watchdog.beat()
            self._sync()
            dist.barrier()
        with self._guard(where):
            if self.hang is not None and self.sizes_done >= self.hang.arg:
                faults.hang_forever()
            if self.kill is not None and self.sizes_done >= self.kill.arg:
                faults.kill_self()
            clock = per_rank.OpClock(session.device, config.iters, self.delay) \
                if self.own_op_times else None
            launch = clock.wrap(operation.launch) if clock else self._delayed(operation.launch)
            loop, per_iter, exhausted = self._measure(launch)
        wrong: int | None = None        # N/A unless the check below runs (nccl-tests' -c 0)
        with self._guard(f"check of {where}"):
            if config.check and operation.count_wrong is not None:
                operation.fill_for_check()
                self._sync()
                operation.launch()
                self._sync()
                if self.corrupt is not None and operation.output.numel() > 0:
                    operation.output.view(-1)[0] += 1
                local_wrong = operation.count_wrong()
                wrong = int(self._reduce_flags([float(local_wrong)], dist.ReduceOp.SUM)[0])
            stats = iter_stats(per_iter, loop)
            self.rank_series[in_place] = (per_iter, clock.times() if clock else [])
            mean, p50, p95, low, high = self._combine(
                [stats.mean, stats.p50, stats.p95, stats.min, stats.max])
            # The precision every rank achieved (max over ranks), recorded for compare's gate.
            (halfwidth,) = self._reduce_flags([min(median_ci_halfwidth(per_iter), 1e9)],
                                              dist.ReduceOp.MAX)
        time_us = mean * 1e6
        algbw, busbw = bandwidths(plan.size_bytes, time_us, plan.collective, session.world_size)
        return BenchResult(
            collective=plan.collective, size_bytes=plan.size_bytes, count=plan.count,
            dtype=plan.dtype, op=plan.op,
            root=config.root if COLLECTIVES[plan.collective].rooted else -1,
            in_place=in_place, world_size=session.world_size, iters=len(per_iter),
            time_us=time_us, time_us_p50=p50 * 1e6, time_us_p95=p95 * 1e6,
            time_us_min=low * 1e6, time_us_max=high * 1e6, algbw_gbs=algbw, busbw_gbs=busbw,
            wrong=wrong, algo=config.algo, average=config.average_name,
            ci_halfwidth=None if halfwidth >= 1e9 else halfwidth, budget_exhausted=exhausted)

    def _delayed(self, launch: Callable[[], None]) -> Callable[[], None]:
        """The launch itself, or behind the planted late-arrival sleep (test seam; with
        --per-rank the OpClock sleeps instead, outside the op time it records)."""
        if self.delay is None:
            return launch
        delay = self.delay

        def late_launch() -> None:
            faults.sleep_ms(delay)
            launch()
        return late_launch

    def attach_rank_times(self, plan: SizePlan, row: dict[bool, BenchResult]) -> None:
        """Gather every rank's per-iteration and own op times of this size to rank 0 (after
        the size, outside any timed loop) and keep them in rank 0's records."""
        width = 2 if self.own_op_times else 1     # (iteration times[, own op times]) each
        series = [s for in_place in row for s in self.rank_series[in_place][:width]]
        with self._guard(f"per-rank times gather of {plan.collective} {plan.size_bytes} B"):
            gathered = per_rank.gather_to_root(series, self.config.iters, self.session.device,
                                               self.session.rank, self.session.world_size)
        if gathered is not None:
            for index, result in enumerate(row.values()):
                result.rank_times_us = gathered[width * index]
                if self.own_op_times:     # no clock without --per-rank: rank_op_us stays None
                    result.rank_op_us = gathered[width * index + 1]

    def placements(self, collective: str) -> list[bool]:
        return placements(self.config, collective)


def placements(config: BenchConfig, collective: str) -> list[bool]:
    """in_place flags to run, out-of-place first as nccl-tests prints it; empty when the only
    placement asked for does not exist (all_reduce, broadcast, reduce with --out-of-place)."""
    chosen = []
    if config.out_of_place and COLLECTIVES[collective].out_of_place:
        chosen.append(False)
    if config.in_place:
        chosen.append(True)
    return chosen


def skipped(config: BenchConfig) -> list[str]:
    """The collectives asked for that have no placement to run, in the order asked."""
    return [c for c in config.collectives if not placements(config, c)]


RowCallback = Callable[[SizePlan, dict[bool, BenchResult]], None]


def run(config: BenchConfig, session: Session | None = None,
        on_row: RowCallback | None = None,
        on_collective: Callable[[str, list[SizePlan], str | None], None] | None = None,
        own_op_times: bool = False) -> list[BenchResult]:
    """Run the sweep on every rank; every rank returns the same aggregated records.

    Works inside a process group the caller already initialised (``session`` None), so a
    training script can benchmark its own group. ``on_row`` is called after each size with its
    records (rank 0 prints and writes them there, so nothing measured is lost on a crash).
    ``own_op_times`` (--per-rank) also records each rank's own time inside every op
    (``rank_op_us``); without it no clock wraps the timed launches. Collectives with no
    placement to run (see :func:`skipped`) are left out.
    """
    from collscope.runtime.dist import attach

    owned = session is None
    session = session or attach(config.timeout_s)
    try:
        config.validate_for_job(session.world_size, session.backend)
        runner = Runner(config, session, own_op_times)
        max_bytes, memory_note = max_bytes_for(config, session, runner.agree_min)
        results: list[BenchResult] = []
        for collective in config.collectives:
            if not runner.placements(collective):
                continue
            sweep = plans(config, collective, session.world_size, max_bytes)
            if on_collective:
                on_collective(collective, sweep, memory_note)
            for plan in sweep:
                row = {in_place: runner.run_placement(plan, in_place)
                       for in_place in runner.placements(collective)}
                runner.sizes_done += 1
                runner.attach_rank_times(plan, row)
                results.extend(row.values())
                if on_row:
                    on_row(plan, row)
        return results
    finally:
        if owned:
            session.close()


def any_wrong(results: list[BenchResult]) -> bool:
    return any((r.wrong or 0) > 0 for r in results)
