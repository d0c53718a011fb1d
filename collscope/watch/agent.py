"""The in-job agent: one daemon thread per rank, started once the default process group
exists. Every interval it reads the Flight Recorder's new entries, publishes the rank's summary
to the store, watches for a stall, and answers a dump request; rank 0's agent also aggregates
(collscope.watch.aggregate). It never raises into, blocks or slows the training thread: all
store I/O happens on its own thread and connection, with timeouts; if anything fails it says
so once on stderr and switches itself off, and the job goes on.
"""

from __future__ import annotations

import atexit
import datetime
import json
import math
import os
import socket
import statistics
import sys
import threading
import time
from collections import deque
from typing import Any

from collscope.records.watch import AgentCostRecord, NoticeRecord
from collscope.runtime import flight_recorder
from collscope.watch import bandwidth, dumps, exchange, levels
from collscope.watch.config import CHANNEL_ENV, AgentSettings
from collscope.watch.flight import DEFAULT_BUFFER_ENTRIES, FlightReader
from collscope.watch.summary import Counter, Summary, summarise
from collscope.watch.waits import MAIN_THREAD, MainThreadReader

# A full FR read (it holds the GIL) may cost at most this share of the interval, judged on
# the median CPU time of the last READS_JUDGED reads (one read descheduled on a loaded host
# must not stretch it); a larger buffer stretches the interval instead of slowing the job.
READ_BUDGET = 0.01
READS_JUDGED = 5
HELLO_WAIT_S = 60.0
# Rank 0 aggregates this long after the grid point at which every agent reads and publishes.
AGGREGATE_AFTER_S = 0.2
EXIT_JOIN_S = 2.0
CLEANUP_TIMEOUT_S = 0.5

_started: list[Agent] = []
_lock = threading.Lock()
_switched_on: dict[str, str] = {}      # what switch_on_flight_recorder added to os.environ


def switch_on_flight_recorder() -> None:
    """Called by the hook just before the user's init_process_group, when torch is imported
    and its ring not yet made: give the ring a size under the name this torch reads
    (TORCH_NCCL_TRACE_BUFFER_SIZE before 2.8, TORCH_FR_BUFFER_SIZE from 2.8), unless the user
    set one it reads. Never raises."""
    try:
        added = flight_recorder.switch_on(os.environ, flight_recorder.running_release(),
                                          DEFAULT_BUFFER_ENTRIES)
        os.environ.update(added)
        _switched_on.update(added)
    except Exception:  # noqa: BLE001 (the user's init_process_group must run regardless)
        pass


def fr_info(recorder: flight_recorder.Recorder, backend: str,
            environ: dict[str, str] | os._Environ[str]) -> dict[str, Any]:
    """How this rank sees its collectives, for the watch_job record: the buffer variable as
    this torch reads it and who set it, the dump function, or why there is none
    (``reads`` = MAIN_THREAD: the stall watch of collscope.watch.waits)."""
    row = recorder.release
    variable, value = flight_recorder.buffer_setting(environ, row)
    entries = flight_recorder.ring_entries(environ, row, backend)
    why = recorder.missing
    if not why and entries == 0:
        why = (f"{variable}={value} keeps no entries" if variable else
               f"torch {recorder.torch_version} keeps no {backend} entries unless "
               f"{row.buffer_variable if row else 'its buffer variable'} is set")
    return {"variable": variable, "entries": value,
            "set_by": None if variable is None else
            "collscope" if variable in _switched_on else "user",
            "ignored": flight_recorder.ignored_buffer_variables(environ, row),
            "torch": recorder.torch_version, "dump": row.dump_json if row else None,
            "reads": MAIN_THREAD if why else "flight_recorder", "why": why}


def next_tick_s(now: float, interval_s: float) -> float:
    """Seconds to the next multiple of the interval on the wall clock. Every rank's agent
    ticks on that one grid, so the few milliseconds each read holds its rank up fall at the
    same moment on every rank; at random phases a collective would wait for each rank's
    hold-up in turn, and the job would lose N of them per interval instead of one."""
    return interval_s - now % interval_s


class Channel:
    """Records for the wrapper (a JSON Lines file per rank in CHANNEL_ENV's folder), or
    stderr lines when no wrapper runs this job (explicit start())."""

    def __init__(self, folder: str | None, rank: int) -> None:
        self.path = os.path.join(folder, f"rank{rank}.jsonl") if folder else None

    def send(self, record: dict[str, Any]) -> None:
        if self.path is None:
            if record.get("title"):
                sys.stderr.write(f"collscope watch: {record['title']}\n")
            return
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")

    def send_many(self, records: list[dict[str, Any]]) -> None:
        """Records without a title (a round's window records), in one write."""
        if self.path is None or not records:
            return
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))


class Agent:
    def __init__(self, rank: int, world_size: int, backend: str, default_store: Any,
                 settings: AgentSettings, channel: Channel,
                 local_rank: int | None = None) -> None:
        self.rank, self.world_size, self.backend = rank, world_size, backend
        self.settings = settings
        self.channel = channel
        self.hello = exchange.Hello(rank, socket.gethostname(), local_rank, os.getpid(),
                                    backend)
        self._default_store = default_store
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="collscope-watch", daemon=True)
        self.store: Any = None
        self.recorder = flight_recorder.probe(backend)
        self.fr_info = fr_info(self.recorder, backend, os.environ)
        self.reader: FlightReader | MainThreadReader = (
            MainThreadReader(backend) if self.fr_info["reads"] == MAIN_THREAD else
            FlightReader(self.recorder.dump_json or (lambda: b"{}")))
        self.counter = Counter()
        self.round = 0
        self.interval_s = settings.interval_s
        self._read_cpu: deque[float] = deque(maxlen=READS_JUDGED)
        self.read_cpu_s = 0.0
        self.overflow_said = False
        self.dumped = False
        self._previous: Summary | None = None
        self.aggregator: Any = None
        self.link: Any = None            # exchange.FlatLink or levels.HostLink
        self.clock_leader = False        # measures its host's clock for rank 0
        self.clock_epoch = 0             # the newest clock exchange it answered
        self.clock_ns = time.time_ns     # the clock it measures

    def start(self) -> None:
        self._thread.start()
        atexit.register(self.stop)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(EXIT_JOIN_S)

    # -- the thread ------------------------------------------------------------------------
    def _run(self) -> None:
        cpu0 = time.thread_time()
        setup = (0.0, time.monotonic())
        try:
            self._setup()
            setup = (time.thread_time() - cpu0, time.monotonic())
            while not self._stop.wait(next_tick_s(time.time(), self.interval_s)) and \
                    self._group_alive():
                self._tick()
        except Exception as error:  # noqa: BLE001 (the agent must never take the job down)
            if self._group_alive() and not sys.is_finalizing():
                sys.stderr.write(f"collscope watch: rank {self.rank}: agent switched off "
                                 f"({type(error).__name__}: {error}); the job goes on "
                                 "unwatched\n")
        finally:
            self._cleanup()
            self._send_cost(setup[0], time.thread_time() - cpu0 - setup[0],
                            time.monotonic() - setup[1])

    def _send_cost(self, setup_cpu_s: float, cpu_s: float, wall_s: float) -> None:
        try:
            self.channel.send(AgentCostRecord(
                time.time(), self.rank, self.hello.host, setup_cpu_s, cpu_s, wall_s,
                cpu_s / wall_s if wall_s > 0 else 0.0, self.round, self.read_cpu_s,
                self.interval_s, self.reader.lost).to_dict())
        except Exception:  # noqa: BLE001 (the job is ending; the cost is not worth an error)
            pass

    @staticmethod
    def _group_alive() -> bool:
        import torch.distributed as dist

        return dist.is_initialized()

    def _setup(self) -> None:
        self.store = exchange.connect(self._default_store, exchange.prefix(os.environ))
        link = levels.HostLink if self.settings.aggregate == "hosts" else exchange.FlatLink
        self.link = link(self.store, self.hello, self.world_size, self._stop.is_set)
        hellos = self.link.join(Summary(0, time.time()).encode(), HELLO_WAIT_S)
        if self.rank == 0:
            from collscope.watch.aggregate import Aggregator

            self.aggregator = Aggregator(self)
            self.aggregator.begin(hellos, self.link.source(hellos, self._notice,
                                                            self.settings.interval_s))
        else:
            lead = exchange.leaders(hellos)
            host0 = next((h.host for h in hellos if h.rank == 0), None)
            if lead.get(self.hello.host) == self.rank and self.hello.host != host0:
                self.clock_leader = True
                exchange.clock_follower(self.store, self.rank, 0, self.clock_ns)

    def _tick(self) -> None:
        self.round += 1
        read = self.reader.read()
        self.counter.update(read.new, read.pending_ids)
        self._read_cpu.append(read.cpu_s)
        self.read_cpu_s += read.cpu_s
        if read.lost and not self.overflow_said:
            self.overflow_said = True
            self.channel.send(NoticeRecord(time.time(), self.rank, "fr_overflow", (
                f"rank {self.rank}: the Flight Recorder's ring overwrote {read.lost} entries "
                f"between two reads ({read.size} entries kept, read every "
                f"{self.interval_s:.2g} s): collectives are missed; set a larger "
                f"{self._buffer_variable()} or a shorter --interval")).to_dict())
        base = self.settings.interval_s
        self.interval_s = base * math.ceil(max(base, statistics.median(self._read_cpu) /
                                               READ_BUDGET) / base - 1e-9)
        now = time.time()
        summary = summarise(self.round, now, read.new, read.oldest_pending, self.counter.counts,
                            bandwidth.tally(read.timed, read.group_sizes))
        published = _with_previous(summary, self._previous)
        self._previous = summary
        self.link.publish(published.encode(), now, self.interval_s)
        pending = summary.pending
        if not self.dumped and pending is not None and \
                pending.age_s >= self.settings.hang_after_s:
            self.store.compare_set(exchange.HANG_KEY, "", json.dumps(
                {"rank": self.rank, "group": pending.group, "collective": pending.collective,
                 "seq": pending.seq, "pending_s": pending.age_s, "time": now}))
        if not self.dumped and self.link.hang_flagged():
            self.dump_once()
        # at scale, host leaders merge and rank 0 aggregates every few intervals only
        every = levels.merge_every(self.world_size) if self.settings.aggregate == "hosts" \
            else 1
        due = round(now / self.interval_s) % every == 0
        if self.link.leader and not self._stop.wait(min(levels.LEAD_AFTER_S,
                                                        self.interval_s / 8)):
            # its host's ranks have published
            self.link.lead(time.time(), self.interval_s * every, due)
        if self.aggregator is not None and due:
            # the other ranks publish at this same grid point: read them once they have
            if not self._stop.wait(min(AGGREGATE_AFTER_S, self.interval_s / 4)):
                self.aggregator.round(self.round)
        elif self.clock_leader:
            asked = exchange.clock_requested(self.store)
            if asked is not None and asked > self.clock_epoch:
                # rank 0 stamps its side on a thread of its own; ours takes a few ms here
                self.clock_epoch = asked
                exchange.clock_follower(self.store, self.rank, asked, self.clock_ns)

    def _buffer_variable(self) -> str:
        row = self.recorder.release
        return row.buffer_variable if row else flight_recorder.FR_BUFFER

    def _notice(self, about: str, title: str) -> None:
        self.channel.send(NoticeRecord(time.time(), self.rank, about, title).to_dict())

    def dump_once(self) -> None:
        """This rank's dump (its Flight Recorder, or its main thread's stack) for a stall, once:
        from its own tick, or from rank 0's aggregator before it waits for every rank's."""
        if self.dumped:
            return
        self.dumped = True
        dumps.write_rank_dump(self.settings.dump_dir, self.rank,
                              None if self.fr_info["reads"] == MAIN_THREAD else
                              self.recorder.dump_pickle)
        self.link.mark_dumped()
        self.channel.send({"kind": "watch_dumped", "rank": self.rank, "time": time.time(),
                           "dump_dir": self.settings.dump_dir})

    def _cleanup(self) -> None:
        """Remove our keys, then let go of the job's store. The reference held until now
        keeps a store server living in this process (rank 0 started without torchrun)
        alive while we use it, and it is released here, on our thread, before the
        interpreter shuts down (atexit joins us), never from under a running call."""
        try:
            if self.store is not None:
                self.store.set_timeout(datetime.timedelta(seconds=CLEANUP_TIMEOUT_S))
                if self.aggregator is not None:
                    self.aggregator.clocks.close(CLEANUP_TIMEOUT_S)
                keys = exchange.own_keys(self.rank, self.clock_epoch) + (
                    exchange.shared_keys(self.aggregator.clocks.epoch)
                    if self.aggregator is not None else [])
                for key in keys:
                    self.store.delete_key(key)
                if self.link is not None:
                    self.link.close()
        except Exception:  # noqa: BLE001 (the store may be gone with the job)
            pass
        finally:
            self.store = None
            self._default_store = None


def _with_previous(summary: Summary, previous: Summary | None) -> Summary:
    """The summary published: this interval's arrivals plus the previous interval's, so an
    aggregator that reads one interval late still sees every arrival (it ignores repeats)."""
    if previous is None:
        return summary
    merged = {g: list(v) for g, v in previous.arrivals.items()}
    for group, items in summary.arrivals.items():
        merged[group] = sorted(set(merged.get(group, [])) | set(items))
    return Summary(summary.round, summary.time, merged, summary.completed, summary.pending,
                   summary.timed)


def start(settings: AgentSettings | None = None) -> bool:
    """Start this rank's agent for the default process group (once; False when there is no
    default group, or the agent already runs). The explicit form of what the bootstrap does
    after init_process_group: ``import collscope.watch; collscope.watch.start()``."""
    import torch.distributed as dist

    with _lock:
        if _started or not dist.is_initialized():
            return False
        local = os.environ.get("LOCAL_RANK")
        agent = Agent(dist.get_rank(), dist.get_world_size(), str(dist.get_backend()),
                      dist.distributed_c10d._get_default_store(),
                      settings or AgentSettings.from_env(os.environ),
                      Channel(os.environ.get(CHANNEL_ENV), dist.get_rank()),
                      int(local) if local and local.isdigit() else None)
        agent.start()
        _started.append(agent)
        return True


def start_quietly() -> None:
    """start() as the bootstrap calls it: any failure is one line on stderr, never raised."""
    try:
        start()
    except Exception as error:  # noqa: BLE001
        sys.stderr.write(f"collscope watch: agent not started ({type(error).__name__}: "
                         f"{error}); the job goes on unwatched\n")
