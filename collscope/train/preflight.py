"""The memory pre-flight's I/O: what is free (device memory, or this rank's share of the
host's MemAvailable) and what this process already holds, handed to the pure estimate in
collscope.train.memory. Runs before any model is built: on the host before spawning local CPU
ranks, and on every rank."""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from collscope.runtime.dist import Session
from collscope.train.config import TrainConfig


def host_available_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """MemAvailable: what the kernel can hand out without swapping; None where unknown."""
    try:
        text = Path(meminfo).read_text()
    except OSError:
        return None
    match = re.search(r"MemAvailable:\s+(\d+)\s*kB", text)
    return int(match.group(1)) * 1024 if match else None


def resident_bytes() -> int:
    from collscope.runtime.spawn import process_memory

    sample = process_memory(os.getpid())
    return sample[0] if sample else 0


def preflight_host(config: TrainConfig, nproc: int, backend: str) -> None:
    """Before spawning local CPU ranks: do nproc copies of this training fit in host memory?
    (GPU ranks check their device themselves.) Exit 2 in seconds instead of an OOM kill."""
    from collscope.train import memory

    if backend in ("nccl", "ucc"):
        return
    available = host_available_bytes()
    if available is None:
        return
    # A rank's process is this one's plus transformers' Llama code (about 130 MiB more).
    memory.preflight(config, nproc, nproc, False, available // nproc,
                     resident_bytes() + 130 * 1024**2,
                     f"host memory MemAvailable {memory.format_size(available)} / {nproc} "
                     "local ranks")


def preflight_rank(session: Session, config: TrainConfig) -> None:
    """On every rank before any model is built: the estimate against this rank's free device
    memory (or its share of host memory)."""
    from collscope.train import memory
    from collscope.train.model import load_model_code

    load_model_code()  # a transformers that cannot build the model is said before any step;
    # on the CPU it is also part of the process the estimate counts
    on_gpu = session.device.type == "cuda"
    if on_gpu:
        free, _total = torch.cuda.mem_get_info(session.device)
        where = f"device {session.device} free memory"
    else:
        available = host_available_bytes()
        if available is None:
            return
        local = max(1, session.launch.local_world_size)
        free, where = available // local, (f"host memory MemAvailable "
                                           f"{memory.format_size(available)} / {local} ranks")
    memory.preflight(config, session.world_size, session.launch.local_world_size, on_gpu,
                     int(free), 0 if on_gpu else resident_bytes(), where)
