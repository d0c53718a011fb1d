"""Measuring one training configuration: step phases, exposed communication, pure
communication, memory, loss.

Exposed communication is measured, not modelled: every timed step is run twice on the same
batch, once with gradient synchronisation and once without (DDP ``no_sync()``; FSDP
``set_requires_gradient_sync(False)``), the two interleaved step by step so that machine drift
(clocks, other jobs, thermals) hits both alike. What the synchronised step takes longer is the
communication that compute did not hide.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from collscope.records.train import TrainRecord
from collscope.runtime.dist import Session
from collscope.runtime.guard import guard
from collscope.runtime.spawn import process_memory
from collscope.testing.faults import planted, sleep_ms
from collscope.train import analysis, parallel
from collscope.train.analysis import Bucket
from collscope.train.config import DDP_DEFAULT, DDPKnobs, ModelSpec, TrainConfig
from collscope.train.model import build_model, synthetic_batch, torch_dtype

# torch dtype -> collscope bench dtype name, for the pure-communication benchmark.
BENCH_DTYPE = {torch.float32: "float", torch.bfloat16: "bfloat16", torch.float16: "half"}


def timing_method(device: torch.device, parallel_kind: str, steps: int) -> str:
    """How every time of a train run was measured, for the run record and the table; the
    exposed-comm interval's level is the one ``steps`` timed steps achieve."""
    clock = ("device events between phases on the compute stream, synchronised after each "
             "step" if device.type == "cuda" else "time.perf_counter() around each phase")
    no_sync = ("DDP no_sync(), no optimizer step (its optimizer time is the synchronised "
               "steps' median), order alternating pair by pair" if parallel_kind == "ddp" else
               "FSDP set_requires_gradient_sync(False), run first in each pair (the "
               "synchronised step then reduces both, as gradient accumulation does); "
               "parameter all-gathers run in both, so only the gradient reduce-scatter is "
               "exposed-comm")
    return (f"{clock}; step = forward + backward + optimizer, per step the slowest rank; "
            "medians over the timed steps after warm-up; exposed comm = median over steps of "
            "(synchronised step - step without gradient sync on the same batch), with its "
            f"distribution-free {analysis.exposed_comm_ci_label(steps)} (" + no_sync + "); "
            "pure comm = collscope bench (p50, mean over ranks) of the step's messages on the "
            "same group; overlap = 1 - exposed / pure, clamped to [0, 1]")


class PhaseClock:
    """Marks phase boundaries of one step: device events on GPUs, perf_counter on CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.marks: list[Any] = []

    def _now(self) -> Any:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def begin(self) -> None:
        self.marks = [self._now()]

    def mark(self) -> None:
        self.marks.append(self._now())

    def durations_ms(self) -> list[float]:
        """Milliseconds between consecutive marks; waits for the device first."""
        pairs = list(zip(self.marks, self.marks[1:]))
        if self.cuda:
            self.marks[-1].synchronize()
            return [a.elapsed_time(b) for a, b in pairs]
        return [(b - a) * 1e3 for a, b in pairs]


def set_cpu_threads(local_world_size: int) -> None:
    """Share the cores between the ranks of this machine (torchrun does the same through
    OMP_NUM_THREADS=1; a local spawn does not), unless the user set OMP_NUM_THREADS."""
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, local_world_size)))


def reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return
    with contextlib.suppress(OSError):  # resets VmHWM (Linux >= 4.0); else lifetime peak
        Path("/proc/self/clear_refs").write_text("5")


def peak_memory(device: torch.device) -> tuple[int, str]:
    """(bytes, method): the device's max allocated, or the process RSS high-water mark."""
    if device.type == "cuda":
        return (int(torch.cuda.max_memory_allocated(device)),
                "torch.cuda.max_memory_allocated, max over ranks")
    memory = process_memory(os.getpid())
    if memory is not None:
        return (memory[1], "process RSS high-water mark (VmHWM, reset per configuration), max "
                           "over ranks")
    import resource

    return (int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024,
            "process RSS high-water mark (getrusage, whole process lifetime), max over ranks")


@dataclass
class StepLog:
    """One rank's per-step milliseconds over the timed steps."""

    forward: list[float]
    backward: list[float]
    optimizer: list[float]
    forward_nosync: list[float]
    backward_nosync: list[float]


class Trainer:
    """One configuration on one rank: the wrapped model, its optimizer and its steps."""

    def __init__(self, session: Session, config: TrainConfig, spec: ModelSpec, knobs: DDPKnobs,
                 ranks_per_node: int, custom_hook: parallel.CommHook | None = None):
        self.session = session
        self.config = config
        self.spec = spec
        self.knobs = knobs
        self.device = session.device
        on_gpu = self.device.type == "cuda"
        self.dtype = torch_dtype(config.resolved_dtype(on_gpu))
        self.fsdp = config.parallel == "fsdp"
        model = build_model(spec, self.device, self.dtype, config.seed)
        self.parameters = sum(p.numel() for p in model.parameters())
        if self.fsdp:
            self.groups = parallel.fsdp_groups(model)
            self.model = parallel.wrap_fsdp(model)
        else:
            self.model = parallel.wrap_ddp(model, knobs, self.device, session.world_size,
                                           ranks_per_node, custom_hook, config.hier_chunk_bytes)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=config.lr,
                                           foreach=True)
        self.clock = PhaseClock(self.device)
        # Kept as tensors: reading them would synchronise the device inside the timed loop.
        self.first_loss: torch.Tensor | None = None
        self.sync_losses: list[torch.Tensor] = []

    def batch(self, step: int) -> torch.Tensor:
        return synthetic_batch(self.spec, self.config.seed, self.session.rank, step, self.device)

    def step(self, tokens: torch.Tensor, sync: bool) -> list[float]:
        """One step; [forward, backward(, optimizer)] milliseconds. Without sync: no optimizer
        step (the replicas would drift apart), and for DDP the local gradients are dropped."""
        model = self.model
        if self.fsdp:
            model.set_requires_gradient_sync(sync)  # type: ignore[operator]
            context: Any = contextlib.nullcontext()
        else:
            context = contextlib.nullcontext() if sync else model.no_sync()  # type: ignore[operator]
        self.clock.begin()
        with context:
            loss = model(input_ids=tokens, labels=tokens).loss
            self.clock.mark()
            sleep_ms(planted("straggle", self.session.rank))
            loss.backward()
        self.clock.mark()
        if sync:
            self.optimizer.step()
            self.clock.mark()
        if sync or not self.fsdp:
            self.optimizer.zero_grad(set_to_none=True)
        times = self.clock.durations_ms()
        if self.first_loss is None:
            self.first_loss = loss.detach()
        if sync:
            self.sync_losses.append(loss.detach())
        self.session.watchdog.beat()
        return times

    def pair(self, index: int, log: StepLog | None) -> None:
        """A synchronised and an unsynchronised step on the same batch."""
        tokens = self.batch(index)
        # DDP alternates the order so neither mode always runs on a warmer cache; FSDP runs the
        # unsynchronised step first so its gradients are reduced by the next, not left behind.
        sync_first = not self.fsdp and index % 2 == 0
        for sync in ((True, False) if sync_first else (False, True)):
            times = self.step(tokens, sync)
            if log is None:
                continue
            if sync:
                log.forward.append(times[0])
                log.backward.append(times[1])
                log.optimizer.append(times[2])
            else:
                log.forward_nosync.append(times[0])
                log.backward_nosync.append(times[1])

    def buckets(self) -> list[Bucket]:
        if self.fsdp:
            return self.groups
        return parallel.ddp_buckets(self.model)  # type: ignore[arg-type]

    def trace(self, directory: Path, steps: int) -> Path:
        """A torch.profiler Chrome trace of ``steps`` synchronised steps of this rank."""
        from torch.profiler import ProfilerActivity, profile, record_function

        activities = [ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"trace_rank{self.session.rank}.json"
        # Shapes give the collectives' sizes (gloo records no record_param_comms); the
        # ProfilerStep#N spans are what `collscope trace` splits the steps by.
        with profile(activities=activities, record_shapes=True) as profiler:
            for index in range(steps):
                with record_function(f"ProfilerStep#{index}"):
                    self.step(self.batch(10_000 + index), sync=True)
        profiler.export_chrome_trace(str(path))
        return path

    def close(self) -> None:
        del self.model, self.optimizer
        self.sync_losses.clear()
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


def pure_comm_ms(session: Session, messages: list[tuple[int, str]], collective: str,
                 algo: str, ranks_per_node: int | None, hier_chunk_bytes: int,
                 iters: int) -> float:
    """Milliseconds the step's messages take on the group alone: collscope bench of each
    distinct size and dtype (p50, mean over ranks), times how often it occurs per step."""
    from collscope.bench import BenchConfig, run

    total_us = 0.0
    for (nbytes, dtype), count in Counter(messages).items():
        if nbytes <= 0:
            continue
        config = BenchConfig(
            collectives=[collective], min_bytes=nbytes, max_bytes=nbytes, iters=iters,
            warmup_iters=2, dtypes=[dtype], ops=["sum"],
            check=0, in_place=collective == "all_reduce",
            out_of_place=collective != "all_reduce", algo=algo,
            ranks_per_node=ranks_per_node if algo == "hierarchical" else None,
            hier_chunk_bytes=hier_chunk_bytes, timeout_s=session.timeout_s)
        results = run(config, session=session)
        if results:
            total_us += count * (results[0].time_us_p50 or results[0].time_us)
    return total_us / 1e3


@dataclass
class Combined:
    """The timed steps of all ranks, as the slowest rank saw each (milliseconds)."""

    sync: list[float]            # forward + backward + optimizer
    nosync: list[float]          # forward + backward without sync + the optimizer median
    forward: list[float]
    backward: list[float]
    optimizer: list[float]
    backward_nosync: list[float]
    peak_memory_bytes: int
    loss_first: float            # means over ranks
    loss_last: float


def combine_ranks(session: Session, log: StepLog, memory: int, losses: list[float]) -> Combined:
    """Per step, the slowest rank's times (one all-reduce, which also carries the peak memory),
    and the rank mean of the losses."""
    rows = [[f + b + o, fn + bn, f, b, o, bn] for f, b, o, fn, bn in
            zip(log.forward, log.backward, log.optimizer, log.forward_nosync,
                log.backward_nosync)]
    rows.append([float(memory)] * 6)
    tensor = torch.tensor(rows, dtype=torch.float64, device=session.device)
    dist.all_reduce(tensor, dist.ReduceOp.MAX)
    table = tensor.tolist()
    peak = int(table.pop()[0])
    loss_sum = torch.tensor(losses, dtype=torch.float64, device=session.device)
    dist.all_reduce(loss_sum, dist.ReduceOp.SUM)
    loss_first, loss_last = (v / session.world_size for v in loss_sum.tolist())
    sync, nosync_fb, forward, backward, optimizer, backward_nosync = (list(c)
                                                                      for c in zip(*table))
    optimizer_median = analysis.spread(optimizer).median
    return Combined(sync, [t + optimizer_median for t in nosync_fb], forward, backward,
                    optimizer, backward_nosync, peak, loss_first, loss_last)


def step_messages(trainer: Trainer, hook: str) -> tuple[list[tuple[int, str]], str, str]:
    """(messages, collective, algorithm) that one synchronised step sends."""
    grad_dtype = BENCH_DTYPE[trainer.dtype]
    if trainer.fsdp:
        return [(b.nbytes, grad_dtype) for b in trainer.buckets()], "reduce_scatter", "flat"
    return (analysis.comm_messages(hook, trainer.buckets(), grad_dtype), "all_reduce",
            "hierarchical" if hook == "hierarchical" else "flat")


def measure(session: Session, config: TrainConfig, knobs: DDPKnobs, ranks_per_node: int,
            baseline_ms: float | None = None, custom_hook: parallel.CommHook | None = None,
            label: str | None = None) -> TrainRecord:
    """Measure one configuration on every rank; every rank returns the same record.

    ``custom_hook`` (state, hook) replaces the named DDP hook; its traffic is counted as a
    flat all-reduce of the buckets.
    """
    on_gpu = session.device.type == "cuda"
    preset = config.resolved_preset(on_gpu)
    spec = config.model_spec(preset)
    label = label or ("fsdp" if config.parallel == "fsdp" else knobs.label())
    what = f"train {label}"
    hook = "none" if custom_hook else knobs.comm_hook
    from collscope.train.memory import estimate
    from collscope.train.model import load_model_code
    from collscope.train.preflight import resident_bytes

    load_model_code()  # imported before the process is measured for the estimate
    estimated = estimate(spec, config.resolved_dtype(on_gpu), config.parallel,
                                session.world_size, on_gpu, knobs.gradient_as_bucket_view,
                                0 if on_gpu else resident_bytes()).total
    reset_peak_memory(session.device)
    with guard(session, f"{what}: model set-up"):
        trainer = Trainer(session, config, spec, knobs, ranks_per_node, custom_hook)
    try:
        log = StepLog([], [], [], [], [])
        with guard(session, f"{what}: warm-up steps"):
            for index in range(config.warmup):
                trainer.pair(index, None)
        with guard(session, f"{what}: timed steps"):
            for index in range(config.warmup, config.warmup + config.steps):
                trainer.pair(index, log)
        memory, memory_method = peak_memory(session.device)
        assert trainer.first_loss is not None
        losses = [trainer.first_loss.float().item(), trainer.sync_losses[-1].float().item()]
        with guard(session, f"{what}: combining ranks"):
            steps = combine_ranks(session, log, memory, losses)
        messages, collective, algo = step_messages(trainer, hook)
        if config.trace_dir:
            with guard(session, f"{what}: profiler trace"):
                trainer.trace(Path(config.trace_dir), config.trace_steps)
    finally:
        trainer.close()
    with guard(session, f"{what}: pure communication benchmark"):
        pure = pure_comm_ms(session, messages, collective, algo, ranks_per_node,
                            config.hier_chunk_bytes, iters=max(5, config.steps))
    step = analysis.spread(steps.sync)
    nosync = analysis.spread(steps.nosync)
    exposed = analysis.exposed_comm(steps.sync, steps.nosync)
    exposed_ci = analysis.exposed_comm_ci(steps.sync, steps.nosync)
    overlap, clamped = analysis.overlap_fraction(exposed, pure)
    tokens = session.world_size * spec.batch_size * spec.seq_len
    return TrainRecord(
        label=label,
        config={"preset": preset, "model": vars(spec) | {"parameters": trainer.parameters},
                "dtype": config.resolved_dtype(on_gpu), "parallel": config.parallel,
                **({} if config.parallel == "fsdp" else vars(knobs)),
                "custom_hook": bool(custom_hook), "ranks_per_node": ranks_per_node,
                "world_size": session.world_size, "steps": config.steps,
                "warmup": config.warmup, "lr": config.lr, "seed": config.seed},
        world_size=session.world_size, steps=config.steps,
        step_time_ms=step.median, step_time_ms_p25=step.p25, step_time_ms_p75=step.p75,
        step_time_ms_min=step.min, step_time_ms_max=step.max,
        step_time_ms_nosync=nosync.median, step_time_ms_nosync_p25=nosync.p25,
        step_time_ms_nosync_p75=nosync.p75,
        forward_ms=analysis.spread(steps.forward).median,
        backward_ms=analysis.spread(steps.backward).median,
        backward_ms_nosync=analysis.spread(steps.backward_nosync).median,
        optimizer_ms=analysis.spread(steps.optimizer).median,
        exposed_comm_ms=exposed,
        exposed_comm_ms_iqr=analysis.paired_iqr(steps.sync, steps.nosync),
        comm_scope=("gradient reduce-scatter (parameter all-gathers not counted)"
                    if trainer.fsdp else "gradient all-reduce"),
        comm_collective=collective, comm_algo=algo,
        comm_bytes_per_step=sum(nbytes for nbytes, _ in messages),
        comm_messages_per_step=len(messages), pure_comm_ms=pure,
        overlap_fraction=overlap, overlap_clamped=clamped,
        tokens_per_s=tokens / (step.median / 1e3), peak_memory_bytes=steps.peak_memory_bytes,
        memory_method=memory_method, loss_first=steps.loss_first, loss_last=steps.loss_last,
        speedup_vs_ddp_default=analysis.speedup(baseline_ms, step.median),
        is_ddp_default=config.parallel == "ddp" and knobs == DDP_DEFAULT and not custom_hook,
        timing=timing_method(session.device, config.parallel, config.steps),
        exposed_comm_ms_ci_low=exposed_ci.low, exposed_comm_ms_ci_high=exposed_ci.high,
        exposed_comm_ci_confidence=exposed_ci.confidence, estimated_memory_bytes=estimated)


def train(session: Session, config: TrainConfig,
          on_record: Callable[[TrainRecord], None] | None = None) -> list[TrainRecord]:
    """Measure every configuration of the grid in order; the DDP default first when swept,
    so each later record carries its speedup over it."""
    ranks_per_node = config.ranks_per_node or session.layout.ranks_per_node
    records: list[TrainRecord] = []
    baseline_ms: float | None = None
    grid = config.grid()
    for index, knobs in enumerate(grid):
        trace = config.trace_dir
        if trace and len(grid) > 1:
            trace = str(Path(trace) / f"config{index}")
        record = measure(session, replace(config, trace_dir=trace), knobs, ranks_per_node,
                         baseline_ms)
        if record.is_ddp_default and baseline_ms is None:
            baseline_ms = record.step_time_ms
            record.speedup_vs_ddp_default = 1.0
        records.append(record)
        if on_record:
            on_record(record)
    return records
