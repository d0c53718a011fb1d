"""`collscope overlap`: does a collective hide under compute on this machine?

The micro view behind `collscope train`'s overlap figure. A matmul and an all_reduce run alone
and together (the collective launched with async_op=True, the matmul issued while it is in
flight: on GPUs the matmul runs on its own CUDA stream and the collective on the
communicator's; on CPU the collective runs in gloo's threads while the matmul runs on the
caller's). Overlap efficiency = (t_compute + t_comm - t_both) / min(t_compute, t_comm): 1 when
the shorter of the two hides completely under the longer, 0 when they serialise, below 0 when
running them together is slower than one after the other (they compete for cores or links).

Importing this module does not import torch (the CLI validates the config before spawning).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from collscope.config_flags import BACKEND_HELP, flag, invalid, json_flag
from collscope.errors import UsageError
from collscope.records.train import OverlapResult
from collscope.stats.summary import iqr
from collscope.units import parse_size

__all__ = ["OverlapConfig", "measure", "overlap_efficiency"]

# Defaults by device: a matmul and a message that take comparable time there.
DEFAULT_DIM = {"cpu": 512, "gpu": 8192}
DEFAULT_BYTES = {"cpu": 4 * 1024**2, "gpu": 256 * 1024**2}
MODES = ("compute", "comm", "both")


def overlap_efficiency(t_compute: float, t_comm: float, t_both: float) -> float | None:
    """(t_compute + t_comm - t_both) / min(t_compute, t_comm); None when a time is not > 0."""
    shorter = min(t_compute, t_comm)
    if shorter <= 0:
        return None
    return (t_compute + t_comm - t_both) / shorter


def dim_for_flops(flops: float) -> int:
    """Side of the square matmul (2 n^3 floating-point operations) closest to ``flops``."""
    return max(1, round((flops / 2) ** (1 / 3)))


def parse_flops(text: str, label: str = "--flops") -> float:
    """'2e9', '500M', '1.5G', '2T' -> operations; UsageError naming ``label`` otherwise."""
    scale = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    body = text.strip().upper()
    suffix = body[-1:] if body[-1:] in "KMGT" else ""
    try:
        value = float(body[: len(body) - len(suffix)]) * scale[suffix]
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError(f"{label}: '{text}' is not a positive number of floating-point "
                         "operations; e.g. 2e9, 500M, 1.5G, 2T (powers of 1000)")
    return value


@dataclass
class OverlapConfig:
    matmul_dim: int | None = flag(None, "--matmul-dim", type=int, metavar="N",
                                  help="square matmul side N (2 N^3 operations; default 512 on "
                                       "CPU, 8192 on GPUs)")
    flops: float | None = flag(None, "--flops", metavar="F", parse=parse_flops,
                               help="size the matmul by operations instead: e.g. 2e9, 500M, 1T")
    size_bytes: int | None = flag(None, "-b", "--bytes", metavar="SIZE", parse=parse_size,
                                  help="all_reduce size with K/M/G suffix (default 4M on CPU, "
                                       "256M on GPUs)")
    iters: int = flag(20, "--iters", type=int, help="timed iterations")
    warmup: int = flag(5, "--warmup", type=int, help="warm-up iterations")
    dtype: str = flag("auto", "--dtype", show_default=False,
                      help="matmul dtype: auto (bfloat16 on GPUs, float32 on CPU), float32, "
                           "bfloat16, float16")
    backend: str = flag("auto", "--backend", show_default=False, help=BACKEND_HELP)
    timeout_s: float = flag(300.0, "--timeout", type=float,
                            help="seconds a collective may wait before every rank exits")

    def __post_init__(self) -> None:
        if self.matmul_dim is not None and self.flops is not None:
            raise UsageError("--matmul-dim/--flops: give one of them, not both")
        if self.matmul_dim is not None and self.matmul_dim < 1:
            raise invalid(self, "matmul_dim", f"{self.matmul_dim} must be >= 1")
        if self.size_bytes is not None and self.size_bytes < 4:
            raise invalid(self, "size_bytes", f"{self.size_bytes} must be at least 4 (one float)")
        if self.iters < 1:
            raise invalid(self, "iters", f"{self.iters} must be >= 1")
        if self.warmup < 0:
            raise invalid(self, "warmup", f"{self.warmup} must be >= 0")
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise invalid(self, "dtype", f"'{self.dtype}' is not accepted; use auto, float32, "
                                         "bfloat16, float16")
        if self.timeout_s <= 0:
            raise invalid(self, "timeout_s", f"{self.timeout_s:g} must be > 0 seconds")

    def resolved(self, on_gpu: bool) -> tuple[int, int, str]:
        """(matmul side, message bytes rounded down to whole floats, matmul dtype)."""
        where = "gpu" if on_gpu else "cpu"
        dim = self.matmul_dim or (dim_for_flops(self.flops) if self.flops else DEFAULT_DIM[where])
        size = (self.size_bytes or DEFAULT_BYTES[where]) // 4 * 4
        dtype = self.dtype if self.dtype != "auto" else ("bfloat16" if on_gpu else "float32")
        return dim, size, dtype

    def validate_for_job(self, world_size: int, backend: str) -> None:
        """An all_reduce of one rank communicates nothing: there is no overlap to measure."""
        if world_size < 2:
            raise UsageError(f"--nproc: overlap needs at least 2 ranks (a {world_size}-rank "
                             "all_reduce communicates nothing)")


@dataclass(frozen=True)
class OverlapOutputs:
    """What rank 0 writes besides stdout; not part of the recorded configuration."""

    json: str | None = json_flag("write JSON Lines: a run record, then the overlap record")


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
