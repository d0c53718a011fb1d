"""A per-rank watchdog: no collective may wait longer than the timeout.

Backends have timeouts of their own (gloo raises, NCCL's watchdog aborts), but not every
backend honours them for every failure, and their messages do not say which benchmark step
was running. This thread knows what the rank is doing; if one step outlives its deadline, it
prints what the rank was waiting in and ends the process, so nothing ever hangs forever.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from collscope.errors import ExitCode

# A rank ended by the watchdog exits like any failed rank (1): scripts see one failure code.
TIMEOUT_EXIT_CODE = ExitCode.FOUND


class Watchdog:
    def __init__(self, timeout_s: float, rank: int):
        self.timeout_s = timeout_s
        self.rank = rank
        self._what: str | None = None
        self._deadline = float("inf")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="collscope-watchdog",
                                        daemon=True)
        self._thread.start()

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        """Guard one blocking step; ``what`` names it in the timeout message. A step nested in
        another hands the watch back to the outer one when it ends."""
        with self._lock:
            outer = (self._what, self._deadline)
            self._what = what
            self._deadline = time.monotonic() + self.timeout_s
        try:
            yield
        finally:
            with self._lock:
                # The outer step is watched again; the inner one's end was progress (as in
                # beat()), so its deadline is a full timeout from now, not its stale one.
                self._what = outer[0]
                self._deadline = (float("inf") if outer[0] is None
                                  else max(outer[1], time.monotonic() + self.timeout_s))

    def beat(self) -> None:
        """One operation of the current step completed: the next one gets a full timeout."""
        if self._what is not None:
            self._deadline = time.monotonic() + self.timeout_s

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                expired = time.monotonic() > self._deadline
                what = self._what
            if expired:
                sys.stderr.write(
                    f"collscope: rank {self.rank}: no progress for {self.timeout_s:g} s while "
                    f"waiting in {what}; a peer rank is dead or hung (see its log). Exiting.\n")
                sys.stderr.flush()
                os._exit(TIMEOUT_EXIT_CODE)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)
