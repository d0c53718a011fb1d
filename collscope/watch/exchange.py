"""What crosses ranks, through the job's own c10d store: keys, the connection, clock offsets.

The agent opens its own client connection to the store server the default process group uses
(the torchrun agent's or rank 0's TCPStore), so its calls never queue behind the training
thread's on a shared client lock; other stores (FileStore, HashStore) are used as they are.
Every key sits under ``collscope/watch/<run id>/<restart>/`` and is removed at the end.

Calls never wait on a missing key (a timed-out c10d wait prints warnings into the job's
stderr): keys are polled with ``check`` and read once they exist.

Clock offsets (hosts only: ranks on one host share its clock): rank 0 sets a key at a moment
it stamps (the midpoint of its set call); each other host's first rank polls for the key and
stamps its appearance as the midpoint between the last check that missed it and the first
that saw it (both checks' midpoints). Offset = that stamp - rank 0's, median over ROUNDS;
spread = the half-gap between the two checks, median over rounds (what the estimate cannot
resolve). This is NTP's exchange carried by the store, good to the store's round trip.

Clocks drift apart over a long job, so rank 0 runs the exchange again every CLOCK_EVERY_S, as
a numbered epoch (its keys under ``clk*/<epoch>/``): it sets CLOCK_REQUEST_KEY to the epoch
and stamps its side on a thread of its own (its aggregation rounds go on); each follower sees
the request on its next agent tick and answers there. Each epoch's keys are removed once read.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

STORE_TIMEOUT_S = 10.0
POLL_S = 0.05
CLOCK_ROUNDS = 7
CLOCK_WAIT_S = 30.0
CLOCK_EVERY_S = 60.0
# Once a follower answers, it polls for each next round's key; rank 0 then looks for its
# readiness this often (not POLL_S), so the follower spends milliseconds polling, not 50 ms.
CLOCK_POLL_S = 0.001
CLOCK_REQUEST_KEY = "clkreq"
CLOCK_METHOD = (f"rank 0 sets a store key at a stamped moment (midpoint of its set); each "
                f"other host's first rank stamps its appearance (midpoint of the last check "
                f"that missed it and the first that saw it); offset = median over "
                f"{CLOCK_ROUNDS} rounds of the difference, spread = median half-gap")


def prefix(environ: dict[str, str] | os._Environ[str]) -> str:
    run = environ.get("TORCHELASTIC_RUN_ID") or environ.get("SLURM_JOB_ID") or "job"
    return f"collscope/watch/{run}/{environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/"


def connect(default_store: Any, key_prefix: str) -> Any:
    """A PrefixStore under ``key_prefix`` on our own connection to the job's store server."""
    import torch.distributed as dist

    inner = default_store
    while hasattr(inner, "underlying_store"):
        inner = inner.underlying_store
    timeout = datetime.timedelta(seconds=STORE_TIMEOUT_S)
    if isinstance(inner, dist.TCPStore):
        inner = dist.TCPStore(inner.host, inner.port, is_master=False, timeout=timeout,
                              wait_for_workers=False)
    else:
        inner.set_timeout(timeout)
    return dist.PrefixStore(key_prefix, inner)


# One function per store key, all of one shape on purpose: each key's spelling in one place
# (twin: watch/levels.py's host keys).
def hello_key(rank: int) -> str:
    return f"hello/{rank}"


def summary_key(rank: int) -> str:
    return f"sum/{rank}"


def dumped_key(rank: int) -> str:
    return f"dumped/{rank}"


HANG_KEY = "hang"


def follower_clock_keys(epoch: int, rank: int) -> list[str]:
    return [f"clkres/{epoch}/{rank}"] + [f"clkready/{epoch}/{k}/{rank}"
                                         for k in range(CLOCK_ROUNDS)]


def master_clock_keys(epoch: int) -> list[str]:
    return [f"clk/{epoch}/{k}" for k in range(CLOCK_ROUNDS)]


def own_keys(rank: int, clock_epoch: int = 0) -> list[str]:
    return [hello_key(rank), summary_key(rank), dumped_key(rank),
            *follower_clock_keys(clock_epoch, rank)]


def shared_keys(clock_epoch: int = 0) -> list[str]:
    return [HANG_KEY, CLOCK_REQUEST_KEY, *master_clock_keys(clock_epoch)]


def wait_for(store: Any, keys: Sequence[str], deadline_s: float,
             stop: Callable[[], bool] = lambda: False, poll_s: float = POLL_S) -> bool:
    """Poll until every key exists (True) or the deadline passes (False)."""
    end = time.monotonic() + deadline_s
    while not store.check(list(keys)):
        if time.monotonic() > end or stop():
            return False
        time.sleep(poll_s)
    return True


def present(store: Any, keys: Sequence[str]) -> list[bool]:
    return [bool(store.check([k])) for k in keys]


@dataclass(frozen=True)
class Hello:
    rank: int
    host: str
    local_rank: int | None
    pid: int
    backend: str

    def encode(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def decode(cls, text: str | bytes) -> Hello:
        return cls(**json.loads(text))


def leaders(hellos: Sequence[Hello]) -> dict[str, int]:
    """host -> its lowest rank (the one that measures the host's clock)."""
    found: dict[str, int] = {}
    for h in sorted(hellos, key=lambda h: h.rank):
        found.setdefault(h.host, h.rank)
    return found


def _mid_ns(call: Callable[[], Any], now_ns: Callable[[], int] = time.time_ns
            ) -> tuple[int, Any]:
    before = now_ns()
    result = call()
    return (before + now_ns()) // 2, result


def clock_master(store: Any, followers: Sequence[int], epoch: int = 0,
                 stop: Callable[[], bool] = lambda: False
                 ) -> dict[int, tuple[float, float]] | None:
    """Rank 0's side of one epoch: stamps each round; returns leader rank -> (offset_us,
    spread_us), or None when a follower did not answer in time (or ``stop`` said so)."""
    stamps = []
    for k in range(CLOCK_ROUNDS):
        if not wait_for(store, [f"clkready/{epoch}/{k}/{r}" for r in followers], CLOCK_WAIT_S,
                        stop, POLL_S if k == 0 else CLOCK_POLL_S):
            return None
        time.sleep(0.005)      # let the followers be polling before the key appears
        stamp, _ = _mid_ns(partial(store.set, f"clk/{epoch}/{k}", "1"))
        stamps.append(stamp)
    if not wait_for(store, [f"clkres/{epoch}/{r}" for r in followers], CLOCK_WAIT_S, stop):
        return None
    found = {}
    for r in followers:
        seen = json.loads(store.get(f"clkres/{epoch}/{r}"))
        offsets = [(at - stamp) / 1000 for (at, _), stamp in zip(seen, stamps)]
        found[r] = (statistics.median(offsets), statistics.median(g / 1000 for _, g in seen))
    return found


def clock_follower(store: Any, rank: int, epoch: int = 0,
                   now_ns: Callable[[], int] = time.time_ns) -> bool:
    """A host leader's side of one epoch: per round, the key's appearance on its own clock
    (``now_ns``)."""
    seen = []
    for k in range(CLOCK_ROUNDS):
        key = f"clk/{epoch}/{k}"
        store.set(f"clkready/{epoch}/{k}/{rank}", "1")
        previous, end = None, time.monotonic() + CLOCK_WAIT_S
        while True:
            now, found = _mid_ns(partial(store.check, [key]), now_ns)
            if found:
                if previous is None:      # already there: no bracket; use this check alone
                    previous = now
                seen.append(((previous + now) // 2, (now - previous) // 2))
                break
            if time.monotonic() > end:
                return False
            previous = now
            time.sleep(0.0001)       # lets the training thread have the GIL between checks
    store.set(f"clkres/{epoch}/{rank}", json.dumps(seen))
    return True


def clock_requested(store: Any) -> int | None:
    """The newest epoch rank 0 asked the followers for (None: none yet); one check."""
    if not store.check([CLOCK_REQUEST_KEY]):
        return None
    return int(store.get(CLOCK_REQUEST_KEY))


def drop_clock_keys(store: Any, epoch: int, followers: Sequence[int]) -> None:
    """An epoch's keys, once rank 0 has read them."""
    for key in [*master_clock_keys(epoch),
                *(k for r in followers for k in follower_clock_keys(epoch, r))]:
        store.delete_key(key)


class FlatSource:
    """Rank 0's read of the flat exchange: every rank's summary key in one ``multi_get`` per
    round (N keys), and on a stall every rank's dumped key."""

    def __init__(self, store: Any, ranks: Sequence[int]) -> None:
        self.store = store
        self.ranks = sorted(ranks)

    def summaries(self) -> list[tuple[int, Any]]:
        from collscope.watch.summary import Summary

        if not self.ranks:
            return []
        texts = self.store.multi_get([summary_key(r) for r in self.ranks])
        return [(rank, Summary.decode(text)) for rank, text in zip(self.ranks, texts)]

    def dumped(self, ranks: Sequence[int], deadline_s: float) -> list[int]:
        keys = [dumped_key(r) for r in ranks]
        end = time.monotonic() + deadline_s
        while not self.store.check(keys) and time.monotonic() < end:
            time.sleep(POLL_S)
        return [r for r, ok in zip(ranks, present(self.store, keys)) if ok]


class FlatLink:
    """A rank's side of the flat exchange (``--aggregate flat``): its hello and summaries go
    straight to the job's store, where rank 0 reads every rank's. The levelled exchange
    (collscope.watch.levels.HostLink) has the same calls."""

    leader = False        # no host leaders here: nobody merges for others

    def __init__(self, store: Any, hello: Hello, world_size: int,
                 stop: Callable[[], bool]) -> None:
        self.store, self.hello, self.world_size, self._stop = store, hello, world_size, stop

    def join(self, first_summary: str, wait_s: float) -> list[Hello]:
        """Publish our hello; every hello that arrived within ``wait_s``."""
        self.store.set(summary_key(self.hello.rank), first_summary)
        self.store.set(hello_key(self.hello.rank), self.hello.encode())
        keys = [hello_key(r) for r in range(self.world_size)]
        wait_for(self.store, keys, wait_s, self._stop)
        here = [k for k, ok in zip(keys, present(self.store, keys)) if ok]
        return [Hello.decode(t) for t in self.store.multi_get(here)] if here else []

    def publish(self, summary_text: str, now: float, interval_s: float) -> None:
        self.store.set(summary_key(self.hello.rank), summary_text)

    def hang_flagged(self) -> bool:
        return bool(self.store.check([HANG_KEY]))

    def mark_dumped(self) -> None:
        self.store.set(dumped_key(self.hello.rank), "1")

    def lead(self, now: float, interval_s: float, merge: bool = True) -> None:
        """Nothing to merge for others in the flat exchange."""

    def source(self, hellos: Sequence[Hello], say: Callable[[str, str], None],
               interval_s: float) -> FlatSource:
        return FlatSource(self.store, [h.rank for h in hellos])

    def close(self) -> None:
        """Nothing of its own to let go of (the agent removes its keys)."""
