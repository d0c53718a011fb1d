"""`collscope overlap`'s measurement (a matmul and an all_reduce alone and together, modes
interleaved) and its text; torch is imported inside ``measure`` only."""

from __future__ import annotations

import statistics
import time
from typing import Any

from collscope.overlap.config import OverlapConfig
from collscope.records.train import OverlapResult
from collscope.stats.summary import iqr

MODES = ("compute", "comm", "both")


def overlap_efficiency(t_compute: float, t_comm: float, t_both: float) -> float | None:
    """(t_compute + t_comm - t_both) / min(t_compute, t_comm); None when a time is not > 0."""
    shorter = min(t_compute, t_comm)
    if shorter <= 0:
        return None
    return (t_compute + t_comm - t_both) / shorter


def timing_method(on_gpu: bool) -> str:
    how = ("device events on the main stream (the matmul on its own CUDA stream, the "
           "all_reduce on the communicator's, joined before the end event)" if on_gpu else
           "time.perf_counter() around each mode (the all_reduce in gloo's threads, the matmul "
           "on the calling thread)")
    return (f"{how}; the three modes interleaved iteration by iteration, in rotating order, "
            "each after a barrier; per iteration the slowest rank; medians over iterations")




def measure(config: OverlapConfig, session: Any) -> OverlapResult:
    """Every rank runs this; every rank returns the same result."""
    import torch
    import torch.distributed as dist

    on_gpu = session.device.type == "cuda"
    dim, size, dtype_name = config.resolved(on_gpu)
    dtype = getattr(torch, dtype_name)
    device = session.device
    generator = torch.Generator(device="cpu").manual_seed(session.rank)
    a = torch.randn(dim, dim, generator=generator).to(device=device, dtype=dtype)
    b = torch.randn(dim, dim, generator=generator).to(device=device, dtype=dtype)
    out = torch.empty(dim, dim, device=device, dtype=dtype)
    message = torch.ones(size // 4, dtype=torch.float32, device=device)
    compute_stream = torch.cuda.Stream(device) if on_gpu else None

    def run(mode: str) -> float:
        """Milliseconds of one iteration of ``mode``."""
        dist.barrier()
        if compute_stream is not None:
            main = torch.cuda.current_stream(device)
            start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record(main)
            work = dist.all_reduce(message, async_op=True) if mode != "compute" else None
            if mode != "comm":
                compute_stream.wait_stream(main)
                with torch.cuda.stream(compute_stream):
                    torch.mm(a, b, out=out)
                main.wait_stream(compute_stream)
            if work is not None:
                work.wait()
            end.record(main)
            end.synchronize()
            return float(start.elapsed_time(end))
        began = time.perf_counter()
        work = dist.all_reduce(message, async_op=True) if mode != "compute" else None
        if mode != "comm":
            torch.mm(a, b, out=out)
        if work is not None:
            work.wait()
        return (time.perf_counter() - began) * 1e3

    what = (f"overlap: matmul {dim}x{dim} {dtype_name} with all_reduce {size} B "
            f"on {session.world_size} ranks")
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    from collscope.runtime.guard import guard

    with guard(session, what):
        for iteration in range(config.warmup + config.iters):
            shift = iteration % len(MODES)
            for mode in MODES[shift:] + MODES[:shift]:
                elapsed = run(mode)
                if iteration >= config.warmup:
                    times[mode].append(elapsed)
                session.watchdog.beat()
        table = torch.tensor([times[m] for m in MODES], dtype=torch.float64, device=device)
        dist.all_reduce(table, dist.ReduceOp.MAX)
    rows = {mode: row for mode, row in zip(MODES, table.tolist())}
    medians = {mode: statistics.median(rows[mode]) for mode in MODES}
    flops = 2.0 * dim**3
    return OverlapResult(
        matmul_dim=dim, matmul_flops=flops, matmul_dtype=dtype_name, size_bytes=size,
        comm_dtype="float", world_size=session.world_size, iters=config.iters,
        t_compute_ms=medians["compute"], t_comm_ms=medians["comm"], t_both_ms=medians["both"],
        t_compute_ms_iqr=iqr(rows["compute"]), t_comm_ms_iqr=iqr(rows["comm"]),
        t_both_ms_iqr=iqr(rows["both"]),
        overlap_efficiency=overlap_efficiency(medians["compute"], medians["comm"],
                                              medians["both"]),
        compute_tflops=flops / (medians["compute"] / 1e3) / 1e12 if medians["compute"] else 0.0,
        timing=timing_method(on_gpu))


def render(result: OverlapResult, backend: str) -> list[str]:
    """What rank 0 prints."""
    from collscope.units import format_size

    efficiency = result.overlap_efficiency
    verdict = ("n/a" if efficiency is None else
               "above 1: noise around fully hidden (together beat the longer alone); raise "
               "--iters" if efficiency > 1.1 else
               "the shorter one hides completely" if efficiency >= 0.9 else
               "partly hidden" if efficiency > 0.1 else
               "serialised: no overlap" if efficiency >= -0.1 else
               "slower together than in sequence: they compete for cores or links")
    return [
        f"# collscope overlap: matmul {result.matmul_dim}x{result.matmul_dim}x"
        f"{result.matmul_dim} {result.matmul_dtype} ({result.matmul_flops / 1e9:.2f} GFLOP) "
        f"and all_reduce {format_size(result.size_bytes)} float, {result.world_size} ranks "
        f"({backend})",
        f"# Timing: {result.timing}; {result.iters} iterations",
        f"  t_compute  {result.t_compute_ms:9.3f} ms  (IQR {result.t_compute_ms_iqr:.3f}; "
        f"{result.compute_tflops * 1e3:.1f} GFLOP/s)",
        f"  t_comm     {result.t_comm_ms:9.3f} ms  (IQR {result.t_comm_ms_iqr:.3f})",
        f"  t_both     {result.t_both_ms:9.3f} ms  (IQR {result.t_both_ms_iqr:.3f})",
        "  overlap efficiency "
        + ("n/a" if efficiency is None else f"{efficiency:.2f}") + f"  ({verdict})",
        "# overlap efficiency = (t_compute + t_comm - t_both) / min(t_compute, t_comm): 1 = the "
        "shorter fully hidden, 0 = serialised, < 0 = slower together",
    ]
