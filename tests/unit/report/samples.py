"""Own small record samples for report tests: bench, train and monitor JSON Lines, built in code.

Numbers are synthetic but consistent (busbw from the collective table), so tests can assert on
them; ``host`` lets a test slip hostile text into every place an input string appears.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from collscope.collectives.table import bandwidths
from collscope.records.bench import BenchResult
from collscope.records.run import RunRecord
from collscope.records.train import TrainRecord

EVIL = "<script>alert(1)</script>"


def run_record(host: str = "node0", world_size: int = 4, command: str = "bench",
               **env: str) -> dict[str, Any]:
    return RunRecord(
        command=command, collscope_version="0.1.0", argv=["collscope", command],
        launcher="torchrun", backend="gloo", world_size=world_size, nodes=1,
        ranks_per_node=world_size, hosts=[host],
        devices=[{"rank": r, "host": host, "node": 0, "local_rank": r, "device": None,
                  "device_type": "cpu", "name": f"cpu {host}"} for r in range(world_size)],
        versions={"torch": "2.13.0+cpu", "python": "3.11"}, env=dict(env),
        timing="perf_counter around each completed op", started_at=1_700_000_000.0,
    ).to_dict()


def result(collective: str, size: int, time_us: float, in_place: bool = True,
           world_size: int = 4, dtype: str = "float", op: str = "sum") -> BenchResult:
    algbw, busbw = bandwidths(size, time_us, collective, world_size)
    return BenchResult(collective=collective, size_bytes=size, count=size // 4, dtype=dtype,
                       op=op, root=-1, in_place=in_place, world_size=world_size, iters=20,
                       time_us=time_us, time_us_p50=time_us, time_us_p95=time_us * 1.1,
                       time_us_min=time_us * 0.9, time_us_max=time_us * 1.2, algbw_gbs=algbw,
                       busbw_gbs=busbw, wrong=0)


def sweep(collective: str = "all_reduce", scale: float = 1.0, world_size: int = 4,
          placements: tuple[bool, ...] = (False, True), sizes: range = range(3, 25, 3),
          ) -> list[BenchResult]:
    """A latency-then-bandwidth-bound sweep: time = 20 us + size / 10 GB/s, times ``scale``."""
    return [result(collective, 1 << e, (20.0 + (1 << e) / 10e3) * scale, in_place, world_size)
            for e in sizes for in_place in placements]


def train_records(host: str = "node0") -> list[dict[str, Any]]:
    rows = []
    for bucket, step, exposed in ((1, 120.0, 40.0), (25, 90.0, 12.0), (100, 100.0, 20.0)):
        rows.append(TrainRecord(
            label=f"bucket_cap_mb={bucket}", config={"bucket_cap_mb": bucket, "comm_hook": host},
            world_size=4, steps=10, step_time_ms=step, step_time_ms_p25=step,
            step_time_ms_p75=step, step_time_ms_min=step, step_time_ms_max=step,
            step_time_ms_nosync=step - exposed, step_time_ms_nosync_p25=step - exposed,
            step_time_ms_nosync_p75=step - exposed, forward_ms=step / 3, backward_ms=step / 3,
            backward_ms_nosync=step / 3 - exposed, optimizer_ms=1.0, exposed_comm_ms=exposed,
            exposed_comm_ms_iqr=1.0, comm_scope="gradient all_reduce",
            comm_collective="all_reduce", comm_algo="flat", comm_bytes_per_step=2 ** 24,
            comm_messages_per_step=4, pure_comm_ms=30.0,
            overlap_fraction=1 - exposed / 30.0 if exposed < 30 else 0.0,
            overlap_clamped=exposed >= 30, tokens_per_s=4096 / step * 1000,
            peak_memory_bytes=3 * 2 ** 30, memory_method="max over ranks", loss_first=10.4,
            loss_last=9.1).to_dict())
    return rows


def samples(host: str = "node0", count: int = 12) -> list[dict[str, Any]]:
    return [{"kind": "sample", "ts": 1_700_000_000.0 + 0.5 * i, "host": host,
             "metrics": {"cpu.percent": 20 + 10 * math.sin(i), "mem.used_bytes": 2 ** 33 + i,
                         f"net.{host}.rx_bytes_per_s": 1e8 * (i % 4),
                         "net.eth0.tx_bytes_per_s": 5e7, "gpu.0.util_percent": None}}
            for i in range(count)]


def write_jsonl(path: Path, records: list[dict[str, Any] | BenchResult]) -> Path:
    lines = [json.dumps(r.to_dict() if isinstance(r, BenchResult) else r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def bench_file(path: Path, scale: float = 1.0, host: str = "node0",
               collectives: tuple[str, ...] = ("all_reduce", "all_gather")) -> Path:
    records: list[Any] = [run_record(host)]
    for collective in collectives:
        records += sweep(collective, scale)
    return write_jsonl(path, records)
