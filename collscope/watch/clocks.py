"""Rank 0's side of the clock exchanges (collscope.watch.exchange): once at start, blocking
(nothing is matched before it), then every CLOCK_EVERY_S as a new epoch on a thread of its own
with its own store connection, so the aggregation rounds go on while it stamps. The offsets an
epoch finds replace the old ones at the first round after it ended, said in a ``watch_clock``
record with how far each host's offset moved (its drift since the epoch before)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from collscope.records.watch import ClockRecord
from collscope.watch import exchange

NO_ANSWER = ("a host's first rank did not answer the clock exchange in "
             f"{exchange.CLOCK_WAIT_S:g} s")


class Clocks:
    def __init__(self, store: Any, connect: Callable[[], Any], followers: dict[int, str],
                 stop: Callable[[], bool], every_s: float = exchange.CLOCK_EVERY_S) -> None:
        self.store = store                   # the agent's connection (used at start only)
        self._connect = connect              # a connection for the thread, made when first due
        self.followers = followers           # leader rank -> its host
        self.every_s = every_s
        self.offset_us: dict[str, float] = {}
        self.epoch = 0
        self._stop = stop
        self._own: Any = None
        self._thread: threading.Thread | None = None
        self._found: dict[int, tuple[float, float]] | None = None
        self._next = time.monotonic() + every_s

    def _ranks(self) -> list[int]:
        return sorted(self.followers)

    def first(self) -> dict[int, tuple[float, float]] | None:
        """Epoch 0, blocking; what it found (None: a follower did not answer), the offsets
        applied when found."""
        found = exchange.clock_master(self.store, self._ranks(), 0, self._stop)
        if found is not None:
            exchange.drop_clock_keys(self.store, 0, self._ranks())
            self.offset_us = {self.followers[r]: off for r, (off, _) in found.items()}
        self._next = time.monotonic() + self.every_s
        return found

    def poll(self) -> ClockRecord | None:
        """Called every round: starts the next epoch when due, and applies an ended one (its
        record returned)."""
        if not self.followers:
            return None
        if self._thread is not None:
            if self._thread.is_alive():
                return None
            self._thread = None
            return self._apply(self._found)
        if time.monotonic() < self._next:
            return None
        if self._own is None:
            self._own = self._connect()
        self.epoch += 1
        self._found = None
        self._own.set(exchange.CLOCK_REQUEST_KEY, str(self.epoch))
        self._thread = threading.Thread(target=self._exchange, args=(self.epoch,),
                                        name="collscope-watch-clock", daemon=True)
        self._thread.start()
        return None

    def _exchange(self, epoch: int) -> None:
        try:
            self._found = exchange.clock_master(self._own, self._ranks(), epoch, self._stop)
            exchange.drop_clock_keys(self._own, epoch, self._ranks())
        except Exception:  # noqa: BLE001 (a store gone with the job: the epoch is not applied)
            self._found = None

    def _apply(self, found: dict[int, tuple[float, float]] | None) -> ClockRecord:
        self._next = time.monotonic() + self.every_s
        if found is None:
            return ClockRecord(time.time(), self.epoch, False,
                               NO_ANSWER + "; the previous offsets kept",
                               dict(self.offset_us), {}, {}, exchange.CLOCK_METHOD)
        new = {self.followers[r]: off for r, (off, _) in found.items()}
        change = {host: round(off - self.offset_us.get(host, 0.0), 1)
                  for host, off in new.items()}
        self.offset_us = new
        return ClockRecord(time.time(), self.epoch, True, f"epoch {self.epoch}", dict(new),
                           {self.followers[r]: s for r, (_, s) in found.items()}, change,
                           exchange.CLOCK_METHOD)

    def close(self, timeout_s: float) -> None:
        """At the end (the stop flag set): let a running epoch see it, drop our connection."""
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._own = None
