"""A rank's post-mortem files, in the layout `collscope hang` reads (HANG_CONTRACT.md):
``fr_trace_rank_<R>`` (the Flight Recorder's standard pickle, as ``_dump_fr_trace`` returns
it, ``_dump_nccl_trace`` before torch 2.8; absent where the backend has no recorder),
``stack_rank_<R>.json`` (the main thread's Python stack) and, from the collecting rank,
``no_answer.json`` naming ranks that did not dump in time. Files appear whole (written to a
temporary name, then renamed)."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from collscope.watch.waits import DDP_MODULE


def _write(path: str, data: bytes) -> None:
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)


def main_thread_stack(rank: int) -> dict[str, Any]:
    """The main thread's frames, outermost first (traceback.extract_stack's order); ``ddp``:
    whether the process imported DistributedDataParallel (whose gradient all-reduce is waited
    for inside backward: collscope.watch.waits)."""
    frame = sys._current_frames().get(threading.main_thread().ident or -1)
    frames = [] if frame is None else [
        {"filename": f.filename, "line": f.lineno, "name": f.name}
        for f in traceback.extract_stack(frame)]
    return {"kind": "main_thread_stack", "rank": rank, "host": socket.gethostname(),
            "pid": os.getpid(), "time": time.time(), "frames": frames,
            "ddp": DDP_MODULE in sys.modules}


def write_rank_dump(folder: str, rank: int,
                    dump_pickle: Callable[[], bytes] | None) -> None:
    """The stack, then the Flight Recorder's pickle where the backend has one (the probe's
    dump function: collscope.runtime.flight_recorder)."""
    os.makedirs(folder, exist_ok=True)
    stack = main_thread_stack(rank)      # first: where the main thread is now
    _write(os.path.join(folder, f"stack_rank_{rank}.json"), json.dumps(stack).encode())
    if dump_pickle is not None:
        _write(os.path.join(folder, f"fr_trace_rank_{rank}"), dump_pickle())


def write_no_answer(folder: str, ranks: Sequence[int], deadline_s: float) -> None:
    why = (f"no dump within {deadline_s:g} s of the request: the rank is dead, or its main "
           "thread holds the GIL (the agent thread cannot run)")
    _write(os.path.join(folder, "no_answer.json"),
           json.dumps({"kind": "no_answer", "ranks": sorted(ranks), "why": why}).encode())
