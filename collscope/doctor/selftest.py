"""The self-test: a small, verified all_reduce across 2 local ranks, with its time.

On CPU the two ranks are two threads of this process, each with its own gloo process group
over a shared in-memory store: a real 2-rank all_reduce through torch.distributed's gloo
transport (TCP on this host, honouring GLOO_SOCKET_IFNAME exactly as a job would), without a
second interpreter start, which keeps ``collscope doctor`` within seconds. With 2 or more GPUs
it spawns 2 local ranks that run ``collscope.bench`` on NCCL/RCCL (the path a training job
takes) at a bandwidth-bound size (256 MiB: its busbw is judged against the GPU link, see
link_bandwidth.py) with ``NCCL_DEBUG=INFO`` written to a file, so the bundle gets a real
nccl-debug.log.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from collscope.collectives.table import bandwidths
from collscope.testing import faults

SIZE_BYTES = 1 << 20                # CPU (gloo): proves the path works, in milliseconds
GPU_SIZE_BYTES = 256 << 20          # GPUs: bandwidth-bound, so busbw can be judged
BANDWIDTH_BOUND_BYTES = 64 << 20    # below this a 2-GPU all_reduce is still latency-bound
WARMUP_ITERS = 2
ITERS = 10
WORLD = 2


@dataclass
class SelfTestResult:
    """What the self-test did and saw; ``time_us`` is the mean time of one all_reduce."""

    status: str                   # ok, fail, skipped
    backend: str = "gloo"
    world_size: int = WORLD
    size_bytes: int = SIZE_BYTES
    iters: int = ITERS
    time_us: float | None = None
    busbw_gbs: float | None = None
    wrong: int | None = None
    error: str | None = None
    method: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SelfTestResult:
        """From selftest.json; a field of the wrong type (a hand-edited file) becomes unknown."""
        result = cls(status=str(data.get("status", "")))
        for name, default in asdict(result).items():
            value = data.get(name, default)
            kind = (int, float) if isinstance(default, (int, float)) or name in (
                "time_us", "busbw_gbs", "wrong") else str
            if name != "status" and (value is None or (isinstance(value, kind)
                                                       and not isinstance(value, bool))):
                setattr(result, name, value)
        return result


def busbw(size_bytes: int, time_us: float, world: int) -> float:
    """nccl-tests' all_reduce bus bandwidth in GB/s: S/t x 2(n-1)/n."""
    return bandwidths(size_bytes, time_us, "all_reduce", world)[1]


def run_gloo_threads(timeout_s: float = 30.0) -> SelfTestResult:
    """Two gloo ranks as two threads of this process; float all_reduce, timed and verified."""
    import torch
    import torch.distributed as dist

    count = SIZE_BYTES // 4
    store = dist.HashStore()
    timeout = datetime.timedelta(seconds=timeout_s)
    times: dict[int, list[float]] = {}
    wrong: dict[int, int] = {}
    errors: list[str] = []

    def rank_body(rank: int) -> None:
        try:
            group: Any = dist.ProcessGroupGloo(dist.PrefixStore("collscope-selftest", store),
                                               rank, WORLD, timeout)
            faults.write_to_fd1(rank)       # test seam: what gloo 2.9 prints as it connects
            data = torch.ones(count, dtype=torch.float32)
            for _ in range(WARMUP_ITERS):
                group.allreduce([data]).wait()
            laps = []
            for _ in range(ITERS):
                start = time.perf_counter()
                group.allreduce([data]).wait()
                laps.append(time.perf_counter() - start)
            # Verify with values whose sum is exact in float32: rank- and index-dependent.
            index = torch.arange(count, dtype=torch.float32) % 7
            data.copy_(index + rank + 1)
            group.allreduce([data]).wait()
            expected = index * WORLD + sum(r + 1 for r in range(WORLD))
            wrong[rank] = int((data != expected).sum().item())
            times[rank] = laps
        except Exception as error:  # gloo raises for bad interfaces, timeouts, peers gone
            errors.append(f"rank {rank}: {error}".splitlines()[0])

    threads = [threading.Thread(target=rank_body, args=(r,), daemon=True,
                                name=f"collscope-selftest-{r}") for r in range(WORLD)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout_s + 5
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    method = (f"2 gloo ranks as threads of this process (in-memory store), float sum of "
              f"{SIZE_BYTES} B, {WARMUP_ITERS} warm-up + {ITERS} timed iterations; time = "
              "mean per all_reduce (perf_counter), slowest rank; verified afterwards")
    if any(thread.is_alive() for thread in threads):
        return SelfTestResult("fail", error=f"no result within {timeout_s:g} s (hung)",
                              method=method)
    if errors:
        return SelfTestResult("fail", error="; ".join(errors), method=method)
    mean_us = max(sum(laps) / len(laps) for laps in times.values()) * 1e6
    total_wrong = sum(wrong.values())
    return SelfTestResult("ok" if total_wrong == 0 else "fail", time_us=round(mean_us, 1),
                          busbw_gbs=round(busbw(SIZE_BYTES, mean_us, WORLD), 4),
                          wrong=total_wrong, method=method,
                          error=None if total_wrong == 0 else
                          f"{total_wrong} wrong element(s) after all_reduce")


def run_gpu_ranks(timeout_s: float = 60.0) -> tuple[SelfTestResult, str | None]:
    """Spawn 2 local ranks on GPUs 0 and 1 running collscope.bench all_reduce on NCCL/RCCL.

    Returns the result and the ranks' NCCL_DEBUG=INFO log (for nccl-debug.log), if any.
    """
    from collscope.runtime.spawn import spawn_local

    with tempfile.TemporaryDirectory(prefix="collscope-selftest-") as tmp:
        out = Path(tmp) / "result.json"
        code = spawn_local(WORLD, ["doctor", "--selftest-rank", str(out),
                                   "--selftest-timeout", str(timeout_s)], timeout_s)
        log = "".join(p.read_text(errors="replace") for p in sorted(Path(tmp).glob("nccl*.log")))
        method = (f"2 local ranks spawned (on GPUs 0 and 1), collscope.bench all_reduce float "
                  f"sum of {GPU_SIZE_BYTES} B, {ITERS} timed iterations; time = mean per op "
                  "(device events on GPUs), mean over ranks; verified afterwards")
        if out.exists():
            result = SelfTestResult.from_dict(json.loads(out.read_text()))
            result.method = method
        else:
            result = SelfTestResult("fail", backend="nccl", method=method,
                                    error=f"the ranks exited with code {code} before a result "
                                          "(their messages are above)")
    return result, log or None


def rank_main(out_path: str, timeout_s: float) -> int:
    """One spawned self-test rank (``collscope doctor --selftest-rank FILE``)."""
    from collscope.bench import BenchConfig
    from collscope.runtime.entry import Job, launch_or_spawn

    # Keep RCCL/NCCL's own account of what it chose, next to the result (not for the user's
    # own NCCL_DEBUG setting: that one wins).
    if "NCCL_DEBUG" not in os.environ:
        os.environ["NCCL_DEBUG"] = "INFO"
        os.environ["NCCL_DEBUG_FILE"] = str(Path(out_path).parent / "nccl.%h.%p.log")
    config = BenchConfig(collectives=["all_reduce"], min_bytes=GPU_SIZE_BYTES,
                         max_bytes=GPU_SIZE_BYTES,
                         iters=ITERS, warmup_iters=WARMUP_ITERS, backend="auto",
                         timeout_s=timeout_s)

    def body(session: Any, _launcher: str) -> int:
        result = bench_result(config, session)
        if session.rank == 0:
            Path(out_path).write_text(json.dumps(result.to_dict()))
        return 0 if result.status == "ok" else 1

    return launch_or_spawn(Job("doctor", "auto", timeout_s, None, config.validate_for_job,
                               body), [])


def bench_result(config: Any, session: Any) -> SelfTestResult:
    """Run a one-size all_reduce with collscope.bench inside ``session``; as a SelfTestResult."""
    from collscope.bench import run

    results = run(config, session=session)
    timed = [r for r in results if r.in_place] or results
    first = timed[0]
    ok = first.wrong == 0
    return SelfTestResult("ok" if ok else "fail", backend=session.label,
                          world_size=session.world_size, size_bytes=first.size_bytes,
                          iters=first.iters, time_us=round(first.time_us, 1),
                          busbw_gbs=round(first.busbw_gbs, 4), wrong=first.wrong,
                          error=None if ok else f"{first.wrong} wrong element(s)")
