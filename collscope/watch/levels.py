"""The exchange in levels (``--aggregate hosts``, the default): rank 0's work and the job
store's traffic grow with hosts, not ranks.

Each host's lowest rank is its leader. It serves a host-local c10d store (a TCPStore bound to
127.0.0.1, so nothing of it leaves the host) where its host's ranks publish their summaries,
flag their dumps and read the stall flag. Every interval (every LARGE_JOB_EVERY-th beyond
LARGE_JOB_RANKS ranks), just after the ranks published, the leader reads its host's
summaries in one ``multi_get`` and publishes them merged, as one record per host in columns
(collscope.watch.columns), to the job's store; rank 0 reads one record per host per round
(one ``multi_get`` of H keys) and hands the matcher the very arrivals the flat exchange would
have given it, a host's at a time. Only the leaders poll the job store's stall key; they relay it
to their host, and pass their host's dumps on as one appended line and one counter step, so
rank 0 collects thousands of dumps by polling one counter.

Joining costs O(1) store calls per rank (no rank reads every hello): each rank appends its
hello to its host's list and steps a counter; rank 0 reads the list of hosts and their lists.

A leader that dies or stalls (its main thread holding the GIL stops its agent thread) is
never a silent blind spot: its host's ranks see its heartbeat (in the host store) go stale
or its store gone, and publish straight to the job's store instead; rank 0 reads any rank
missing from a fresh host record there, and says once which host's leader stopped and
whether its ranks are still seen.
"""

from __future__ import annotations

import datetime
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from collscope.watch import columns
from collscope.watch.exchange import (
    CLOCK_WAIT_S,
    HANG_KEY,
    POLL_S,
    Hello,
    dumped_key,
    present,
    summary_key,
)
from collscope.watch.summary import Summary

HOSTS_KEY = "hosts"             # one line per host, appended by its first rank to join
JOINED_KEY = "joined"           # ranks joined (a counter)
DUMPED_KEY = "dumpedranks"      # "r,r,...," appended by leaders (and by ranks gone direct)
DUMPED_COUNT_KEY = "dumpedn"    # how many ranks that list holds (a counter)
BEAT_KEY = "beat"               # host store: the leader's last merge, "unix_s interval_s"
HOST_HANG_KEY = "hang"          # host store: the leader relayed the job's stall flag
JOIN_POLL_S = 0.2
HOST_TIMEOUT_S = 2.0
# A leader merges this long after the grid point at which its host's ranks publish.
LEAD_AFTER_S = 0.1
# A host record (or a leader's heartbeat) older than this many intervals: the leader stopped.
STALE_INTERVALS = 3
FIRST_MERGE_WAIT_S = CLOCK_WAIT_S
# Beyond this many ranks the leaders merge, and rank 0 aggregates, every LARGE_JOB_EVERY-th
# interval of the wall-clock grid (the ranks still publish every interval). What rank 0
# spends and what crosses the job's store then halve (benchmarks/watch_scale.py: at 16,384
# ranks both were over their bounds at every interval); a finding comes up to one interval
# later. Each summary carries two intervals' arrivals, so no collective is missed, but a
# rank 0 that reads a merge late no longer finds the one before in the next.
LARGE_JOB_RANKS = 8192
LARGE_JOB_EVERY = 2


def merge_every(world_size: int) -> int:
    """Every how many intervals the leaders merge and rank 0 aggregates."""
    return LARGE_JOB_EVERY if world_size > LARGE_JOB_RANKS else 1


# One function per store key, all of one shape on purpose (twin: watch/exchange.py's rank keys).
def members_key(host: str) -> str:
    return f"members/{host}"


def first_key(host: str) -> str:
    return f"hostn/{host}"


def host_store_key(host: str) -> str:
    return f"hoststore/{host}"


def host_record_key(host: str) -> str:
    return f"hostsum/{host}"


def encode_record(now: float, leader: int, interval_s: float,
                  summaries: Sequence[tuple[int, bytes | str]]) -> bytes:
    """One host's record: the leader, when and at what interval it merged, and its ranks'
    summaries as they published them, in columns (collscope.watch.columns)."""
    return columns.encode(now, leader, interval_s,
                          [(rank, Summary.decode(text)) for rank, text in summaries])


def host_store(port_wanted: int = 0) -> tuple[Any, int]:
    """A TCPStore server listening on 127.0.0.1 only (a socket we bind, handed over)."""
    import torch.distributed as dist

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port_wanted))
    listener.listen(128)
    port = listener.getsockname()[1]
    options: dict[str, Any] = {"is_master": True, "wait_for_workers": False,
                               "timeout": datetime.timedelta(seconds=HOST_TIMEOUT_S),
                               "master_listen_fd": listener.detach()}
    try:
        server = dist.TCPStore("127.0.0.1", port, **options)
    except NotImplementedError:
        # torch <= 2.6: its libuv server cannot take a bound socket (it says so before
        # touching the socket); the older server can.
        server = dist.TCPStore("127.0.0.1", port, use_libuv=False, **options)
    return server, port


def connect_host(port: int) -> Any:
    import torch.distributed as dist

    return dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False,
                         timeout=datetime.timedelta(seconds=HOST_TIMEOUT_S))


class HostLink:
    """A rank's side of the levelled exchange (the calls of exchange.FlatLink)."""

    def __init__(self, store: Any, hello: Hello, world_size: int,
                 stop: Callable[[], bool]) -> None:
        self.store, self.hello, self.world_size, self._stop = store, hello, world_size, stop
        self.rank = hello.rank
        self.members: list[Hello] = []
        self.hosts: dict[str, list[Hello]] = {}     # rank 0: every host's ranks
        self.leader_rank = -1
        self.server: Any = None        # the leader's host store (its server lives here)
        self.local: Any = None         # our connection to our host's store
        self.direct = False            # publishing to the job's store: our leader is gone
        self.joined_at = time.time()
        self.hang_seen = False
        self._seen: set[int] = set()      # leader: ranks whose summary key exists
        self._passed: set[int] = set()    # leader: ranks whose dump was passed on

    @property
    def leader(self) -> bool:
        return self.leader_rank == self.rank

    def join(self, first_summary: str, wait_s: float) -> list[Hello]:
        """Join the host's list and wait (at most ``wait_s``) for every rank to; the hellos
        this rank learns: every rank's on rank 0, its host's elsewhere."""
        host = self.hello.host
        if int(self.store.add(first_key(host), 1)) == 1:
            self.store.append(HOSTS_KEY, host + "\n")
        self.store.append(members_key(host), self.hello.encode() + "\n")
        self.store.add(JOINED_KEY, 1)
        end = time.monotonic() + wait_s
        while int(self.store.add(JOINED_KEY, 0)) < self.world_size and \
                time.monotonic() < end and not self._stop():
            time.sleep(JOIN_POLL_S)
        self.joined_at = time.time()
        self.members = _hellos(self.store.get(members_key(host)))
        self.leader_rank = min(h.rank for h in self.members)
        if self.leader:
            self._serve(first_summary)
        else:
            self._attach(first_summary, end)
        if self.rank != 0:
            return self.members
        hosts = [h for h in self.store.get(HOSTS_KEY).decode().split("\n") if h]
        lists = self.store.multi_get([members_key(h) for h in hosts])
        self.hosts = {h: _hellos(text) for h, text in zip(hosts, lists)}
        return sorted((m for ms in self.hosts.values() for m in ms), key=lambda h: h.rank)

    def _serve(self, first_summary: str) -> None:
        self.server, port = host_store()
        self.local = connect_host(port)
        self.local.set(summary_key(self.rank), first_summary)
        self.store.set(host_record_key(self.hello.host),
                       encode_record(time.time(), self.rank, 0, []))
        self.store.set(host_store_key(self.hello.host), str(port))

    def _attach(self, first_summary: str, end: float) -> None:
        key = host_store_key(self.hello.host)
        while not self.store.check([key]) and time.monotonic() < end and not self._stop():
            time.sleep(JOIN_POLL_S)
        try:
            self.local = connect_host(int(self.store.get(key)))
            self.local.set(summary_key(self.rank), first_summary)
        except Exception:  # noqa: BLE001 (no leader's store: publish to the job's store)
            self.local, self.direct = None, True
            self.store.set(summary_key(self.rank), first_summary)

    # -- every rank, every interval ----------------------------------------------------------
    def publish(self, summary_text: str, now: float, interval_s: float) -> None:
        if self.local is not None:
            try:
                self.local.set(summary_key(self.rank), summary_text)
                self.direct = not self.leader and self._leader_gone(now, interval_s)
            except Exception:  # noqa: BLE001 (the leader's process is gone)
                self.local, self.direct = None, True
        if self.direct:
            self.store.set(summary_key(self.rank), summary_text)

    def _leader_gone(self, now: float, interval_s: float) -> bool:
        if not self.local.check([BEAT_KEY]):      # no merge yet: the leader may be busy
            return now - self.joined_at > FIRST_MERGE_WAIT_S      # with the clock exchange
        beat = self.local.get(BEAT_KEY).decode().split()
        return now - float(beat[0]) > STALE_INTERVALS * max(interval_s, float(beat[1]))

    def hang_flagged(self) -> bool:
        """The job's stall flag: leaders (and ranks gone direct) read the job's store and
        relay it into the host's; the others read their host's."""
        if self.hang_seen:
            return True
        if self.leader or self.direct or self.local is None:
            self.hang_seen = bool(self.store.check([HANG_KEY]))
            if self.hang_seen and self.leader:
                self.local.set(HOST_HANG_KEY, "1")
        else:
            self.hang_seen = bool(self.local.check([HOST_HANG_KEY]))
        return self.hang_seen

    def mark_dumped(self) -> None:
        if not self.direct and self.local is not None:
            try:
                self.local.set(dumped_key(self.rank), "1")
                return
            except Exception:  # noqa: BLE001 (the leader's process is gone)
                self.local, self.direct = None, True
        _pass_on(self.store, [self.rank])

    # -- the leader, every interval ------------------------------------------------------------
    def lead(self, now: float, interval_s: float, merge: bool = True) -> None:
        """Merge the host's summaries into one record for rank 0 (``merge``: due now;
        ``interval_s``: how often it merges); pass new dumps on."""
        if not self.leader:
            return
        if not merge:
            if self.hang_seen:
                self.pass_dumps()
            return
        unseen = [h.rank for h in self.members if h.rank not in self._seen]
        self._seen.update(r for r, ok in zip(unseen, present(
            self.local, [summary_key(r) for r in unseen])) if ok)
        ranks = sorted(self._seen)
        texts = self.local.multi_get([summary_key(r) for r in ranks])
        self.store.set(host_record_key(self.hello.host),
                       encode_record(now, self.rank, interval_s, list(zip(ranks, texts))))
        self.local.set(BEAT_KEY, f"{now:.3f} {interval_s:g}")
        if self.hang_seen:
            self.pass_dumps()

    def pass_dumps(self) -> None:
        """The leader: pass on its host's ranks that dumped since it last looked."""
        waiting = [h.rank for h in self.members if h.rank not in self._passed]
        done = [r for r, ok in zip(waiting, present(
            self.local, [dumped_key(r) for r in waiting])) if ok]
        if done:
            _pass_on(self.store, done)
            self._passed.update(done)

    def source(self, hellos: Sequence[Hello], say: Callable[[str, str], None],
               interval_s: float) -> HostRecords:
        # rank 0 leads its own host: while it waits for the dumps it passes its host's on
        return HostRecords(self.store, self.hosts, say, interval_s,
                           self.pass_dumps if self.leader else None)

    def close(self) -> None:
        """The job is ending: our host keys go (the agent removes the rest), then the host
        store (its server with the leader's reference)."""
        if self.leader:
            for key in (host_record_key(self.hello.host), host_store_key(self.hello.host)):
                self.store.delete_key(key)
        if self.rank == 0:
            for host in self.hosts:
                for key in (members_key(host), first_key(host)):
                    self.store.delete_key(key)
            for key in (HOSTS_KEY, JOINED_KEY, DUMPED_KEY, DUMPED_COUNT_KEY):
                self.store.delete_key(key)
        self.local = self.server = None


def _hellos(text: bytes) -> list[Hello]:
    return [Hello.decode(line) for line in text.decode().split("\n") if line]


def _pass_on(store: Any, ranks: Sequence[int]) -> None:
    store.append(DUMPED_KEY, "".join(f"{r}," for r in ranks))
    store.add(DUMPED_COUNT_KEY, len(ranks))


@dataclass
class HostRead:
    """One round's read on rank 0: each host's record, and the ranks read one by one from
    the job's store (their leader stopped, or its record lacks them)."""

    records: list[tuple[str, columns.HostRecord]]
    direct: list[tuple[int, Summary]]


class HostRecords:
    """Rank 0's read of the levelled exchange: one record per host per round, the ranks a
    record lacks (their leader stopped) from the job's store, and on a stall the dumped ranks
    by polling one counter."""

    def __init__(self, store: Any, hosts: dict[str, list[Hello]],
                 say: Callable[[str, str], None], interval_s: float,
                 pass_own: Callable[[], None] | None = None) -> None:
        self.store, self.hosts, self._say = store, hosts, say
        self._pass_own = pass_own       # rank 0's own host's dumps (it is their leader)
        self.ready: set[str] = set()
        self.since: float | None = None     # the first read (a leader's age counts from it)
        self.interval_s = interval_s        # the longest interval a leader merges at
        self.stopped: dict[str, bool] = {}      # host -> its ranks still seen (said once)

    def summaries(self) -> HostRead:
        now = time.time()
        self.since = self.since or now
        waiting = [h for h in self.hosts if h not in self.ready]
        self.ready.update(h for h, ok in zip(waiting, present(
            self.store, [host_record_key(h) for h in waiting])) if ok)
        hosts = [h for h in self.hosts if h in self.ready]
        blobs = self.store.multi_get([host_record_key(h) for h in hosts]) if hosts else []
        records = [(host, columns.HostRecord(blob)) for host, blob in zip(hosts, blobs)]
        found: set[int] = set()
        ages = {h: now - self.since for h in self.hosts}
        merged_at: dict[str, float] = {}
        for host, record in records:
            if record.interval_s:
                self.interval_s = max(self.interval_s, record.interval_s)
                merged_at[host] = record.time
            found.update(record.ranks)
        # A leader's age counts from the newest merge read (rank 0's own, as its host's
        # leader, made just before): a rank 0 that reads late finds no leader stale.
        newest = max(merged_at.values(), default=now)
        ages.update((host, newest - at) for host, at in merged_at.items())
        merged = set(merged_at)
        limit = STALE_INTERVALS * self.interval_s
        stale = {h for h, age in ages.items() if age > limit}
        # every rank of a host whose leader stopped, and ranks a real merge lacks; before a
        # leader's first merge its ranks are not looked for (no N lookups at start)
        missing = [h.rank for host, ms in self.hosts.items() for h in ms
                   if host in stale or (host in merged and h.rank not in found)]
        direct = [r for r, ok in zip(missing, present(
            self.store, [summary_key(r) for r in missing])) if ok]
        texts = self.store.multi_get([summary_key(r) for r in direct]) if direct else []
        self._judge({h: ages[h] for h in stale}, set(direct))
        for host in set(self.stopped) - stale:
            del self.stopped[host]
        # the ranks read from the job's store come after the records: theirs are newer
        return HostRead(records, [(r, Summary.decode(t)) for r, t in zip(direct, texts)])

    def _judge(self, stale: dict[str, float], direct: set[int]) -> None:
        """Say once when a host's leader stops, and whether its ranks are still seen."""
        for host, age in stale.items():
            ranks = [h.rank for h in self.hosts[host]]
            seen = all(r in direct for r in ranks)
            if self.stopped.get(host) == seen:
                continue
            self.stopped[host] = seen
            how = ("its ranks now publish to the job's store and are read one by one"
                   if seen else "its ranks are not seen (" + ", ".join(
                       str(r) for r in ranks if r not in direct) + "): unwatched until it "
                   "is back")
            self._say("leader_stopped", (
                f"host {host}: its leader rank {min(ranks)} merged nothing for {age:.1f} s "
                f"(dead, or its main thread holds the GIL); {how}"))

    def dumped(self, ranks: Sequence[int], deadline_s: float) -> list[int]:
        end = time.monotonic() + deadline_s
        while True:
            if self._pass_own is not None:
                self._pass_own()
            if int(self.store.add(DUMPED_COUNT_KEY, 0)) >= len(ranks) or \
                    time.monotonic() >= end:
                break
            time.sleep(POLL_S)
        if not self.store.check([DUMPED_KEY]):
            return []
        passed = {int(r) for r in self.store.get(DUMPED_KEY).decode().split(",") if r}
        return [r for r in ranks if r in passed]
