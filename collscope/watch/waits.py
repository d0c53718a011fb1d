"""Watching for a stall without a Flight Recorder: where the rank's main thread waits.

Where torch keeps no ring of collectives for the job's backend (gloo before torch 2.8, or a
buffer set to 0), each agent looks at its main thread's Python stack every interval
(``sys._current_frames``, the way py-spy and faulthandler see a thread) and asks one question:
is it blocked inside a collective, and is it the same call as at the last look?

A wait is the innermost run of frames in torch's own ``torch/distributed`` or
``torch/autograd`` packages, when that run holds:
- a frame of ``distributed_c10d.py`` (``all_reduce``, ``barrier``, ``all_gather_object``...,
  also when FSDP or a user's helper called it): the collective is the outermost such frame,
  the function the caller called; or
- autograd's backward (``_engine_run_backward`` / ``backward``) in a process that imported
  DistributedDataParallel: DDP's gradient all-reduce is waited for in C++ at the end of
  backward, so the thread sits there while a peer is missing (a backward longer than
  --hang-after therefore reads as a stall too).
"The same call" is the same frame object: the reader keeps a reference to the frame it saw
(at most one interval after the call returned), so a new call can never be taken for the old
one at a reused address, and a loop of short collectives never ages.

Pure parts: :func:`wait_site` over (file, function, line) frames, innermost first, which the
wrapper's verdict uses on the stacks the ranks dumped (collscope.watch.stacks).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

from collscope.parsers.flight_recorder import FlightEntry
from collscope.watch.flight import Read

MAIN_THREAD = "main_thread"     # the watch_job's flight_recorder.reads when no ring records
C10D_FILE = "distributed/distributed_c10d.py"
BACKWARD = (("autograd/graph.py", "_engine_run_backward"), ("autograd/__init__.py", "backward"))
DDP_MODULE = "torch.nn.parallel.distributed"
TORCH_PARTS = ("/torch/distributed/", "/torch/autograd/")


@dataclass(frozen=True)
class Site:
    """A wait: the collective (or ``backward``), the frame that identifies the call (index
    into the frames given, innermost 0), and the caller's place outside torch."""

    collective: str
    frame_index: int
    caller: str                     # "train.py:28 in step", "" when torch is outermost


def _in_torch(filename: str) -> bool:
    path = filename.replace("\\", "/")
    return any(part in path for part in TORCH_PARTS)


def wait_site(frames: Iterable[tuple[str, str, int]], ddp: bool) -> Site | None:
    """Where the thread whose frames (file, function, line; innermost first) are given waits
    in a collective; None when its innermost frame is not torch's distributed/autograd code
    or the run holds no collective wait."""
    run: list[tuple[str, str, int]] = []
    caller = ""
    rest = iter(frames)
    for frame in rest:
        if not _in_torch(frame[0]):
            if run:       # the caller: the first frame outside torch (past torch/_tensor.py)
                outside = next((f for f in [frame, *rest] if "/torch/" not in
                                f[0].replace("\\", "/")), None)
                caller = f"{outside[0]}:{outside[2]} in {outside[1]}" if outside else ""
            break
        run.append(frame)
    if not run:
        return None
    c10d = [i for i, (file, _, _) in enumerate(run) if file.replace("\\", "/").endswith(C10D_FILE)]
    if c10d:
        return Site(run[c10d[-1]][1], c10d[-1], caller)
    innermost = run[0][0].replace("\\", "/")
    if ddp and any(innermost.endswith(f) and run[0][1] == n for f, n in BACKWARD):
        # the call is the outermost autograd frame: one backward from its start
        return Site("backward", max(i for i, (file, _, _) in enumerate(run)
                                    if "/torch/autograd/" in file.replace("\\", "/")), caller)
    return None


def _frames(frame: FrameType | None) -> Iterator[tuple[FrameType, tuple[str, str, int]]]:
    while frame is not None:
        yield frame, (frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno)
        frame = frame.f_back


class MainThreadReader:
    """The Flight Recorder reader's stand-in (same ``read``): no entries ever, and as the
    oldest pending one the wait the main thread is in, aged from when it was first seen (so
    a stall is seen up to one interval late)."""

    def __init__(self, backend: str, thread_id: int | None = None,
                 frames: Callable[[], dict[int, Any]] = sys._current_frames,
                 clock_ns: Callable[[], int] = time.time_ns) -> None:
        self.prefix = backend.rpartition(":")[2] or "c10d"
        self.thread_id = thread_id if thread_id is not None else threading.main_thread().ident
        self._frames = frames
        self._clock_ns = clock_ns
        self._frame: FrameType | None = None       # held so its address is never reused
        self._since_ns = 0
        self._calls = 0
        self.lost = 0

    def read(self) -> Read:
        started = time.thread_time()
        top = self._frames().get(self.thread_id) if self.thread_id is not None else None
        walked = list(_frames(top)) if top is not None else []
        site = wait_site((f for _, f in walked), ddp=DDP_MODULE in sys.modules)
        del top
        pending = None
        if site is None:
            self._frame = None
        else:
            frame = walked[site.frame_index][0]
            if frame is not self._frame:
                self._frame, self._since_ns = frame, self._clock_ns()
                self._calls += 1
            pending = FlightEntry(record_id=self._calls, pg_id=-1, process_group=("", ""),
                                  collective_seq_id=-1, p2p_seq_id=-1, op_id=-1,
                                  profiling_name=f"{self.prefix}:{site.collective}",
                                  state="scheduled", retired=False,
                                  time_created_ns=self._since_ns)
        walked.clear()
        return Read([], pending, {pending.record_id} if pending else set(), 0, 0,
                    time.thread_time() - started)
