"""Reading this rank's Flight Recorder, incrementally and with bounded memory.

``torch._C._distributed_c10d._dump_fr_trace_json`` returns the whole ring buffer (NCCL, RCCL,
and gloo from torch 2.8). Each read decodes the ring into the one entry model (msgspec,
:class:`collscope.parsers.flight_recorder.FlightEntry`, hang's too: sizes stay raw JSON until
a timed entry's are asked for), and keeps nothing but the highest record id seen, so a read
hands over only the entries that are new since the previous one; entries the ring overwrote
before a read are counted as lost.
gloo entries stay ``scheduled`` and become ``retired`` when done; NCCL's are ``completed``.

Durations: NCCL and RCCL entries carry ``duration_ms`` (CUDA events around the collective) when
timing is on (``TORCH_NCCL_ENABLE_TIMING=1``); torch sets it as the watchdog retires the entry,
so an entry first read in flight gets it later. The reader therefore keeps the record ids of
entries read before they retired and hands each over once more, in ``Read.timed``, when its
duration appears; an entry that retired without one (gloo, timing off) is let go. The group
sizes come from the dump's ``pg_config`` (NCCL lists each group's ranks; gloo lists none).

The dump function and the variable that sizes the ring differ across torch releases
(``_dump_nccl_trace_json`` and TORCH_NCCL_TRACE_BUFFER_SIZE, NCCL/RCCL only, before 2.8):
collscope.runtime.flight_recorder says which; the agent hands the reader its dump function.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from collscope.parsers.flight_recorder import FlightEntry, group_ranks

# Entries kept when watch switches FR on. Each read dumps the whole ring, so its cost grows
# with the ring, not with what is new: measured here (torch 2.13, gloo, 4 ranks on 2 cores),
# about 2.4 ms of CPU per read at 256 entries against 5-6 ms at 500 (the agent then took 0.29 %
# against 0.62 % of a core per rank). 256 entries still hold a few seconds of a busy job's
# collectives (the post-mortem needs only the last few of each group); a ring that
# overflows between two reads is said (watch_notice fr_overflow).
DEFAULT_BUFFER_ENTRIES = 256


class GroupConfig(msgspec.Struct):
    ranks: str = ""                   # "[0, 1, 2, 3]"; "[]" where the backend lists none


class Dump(msgspec.Struct):
    entries: list[FlightEntry] = []
    pg_config: dict[str, GroupConfig] = {}


def group_size(config: GroupConfig) -> int | None:
    """Members of a group as ``pg_config`` lists them; None when it lists none."""
    return len(group_ranks(config.ranks)) or None


_decoder = msgspec.json.Decoder(Dump)


@dataclass
class Read:
    new: list[FlightEntry]           # entries not handed over before, oldest first
    oldest_pending: FlightEntry | None   # the oldest entry not yet completed (any age)
    pending_ids: set[int]            # record ids of every entry not yet completed
    lost: int                        # entries overwritten before they could be read, so far
    size: int                        # entries the ring held at this read
    cpu_s: float                     # this thread's CPU time for the read (dump + decode)
    timed: list[FlightEntry] = field(default_factory=list)  # durations new since the last read
    group_sizes: dict[str, int] = field(default_factory=dict)  # group name -> members


class FlightReader:
    """Hands over each FR entry once; ``source`` returns the JSON dump (the probe's
    ``Recorder.dump_json`` in a rank)."""

    def __init__(self, source: Callable[[], bytes]) -> None:
        self._source = source
        self._last_id = -1
        self._untimed: set[int] = set()      # handed over before retiring, no duration yet
        self.group_sizes: dict[str, int] = {}
        self.lost = 0

    def read(self) -> Read:
        started = time.thread_time()
        dump = _decoder.decode(self._source())
        entries = dump.entries
        new = [e for e in entries if e.record_id > self._last_id]
        if new:
            if self._last_id >= 0:
                self.lost += max(0, new[0].record_id - self._last_id - 1)
            self._last_id = new[-1].record_id
        timed = self._timed(entries, new)
        for name, config in dump.pg_config.items():
            if name not in self.group_sizes and (size := group_size(config)) is not None:
                self.group_sizes[name] = size
        pending = [e for e in entries if not e.done]
        oldest = min(pending, key=lambda e: e.time_created_ns) if pending else None
        return Read(new, oldest, {e.record_id for e in pending}, self.lost, len(entries),
                    time.thread_time() - started, timed, self.group_sizes)

    def _timed(self, entries: list[FlightEntry], new: list[FlightEntry]) -> list[FlightEntry]:
        """Entries whose duration is known and was not handed over before: new ones that
        have it, and earlier ones that got it since (each once)."""
        timed = []
        if self._untimed:
            by_id = {e.record_id: e for e in entries}
            waiting = set()
            for record_id in self._untimed:
                entry = by_id.get(record_id)      # None: the ring overwrote it meanwhile
                if entry is None:
                    continue
                if entry.timed_ms is not None:
                    timed.append(entry)
                elif not entry.retired:
                    waiting.add(record_id)
            self._untimed = waiting
        for entry in new:
            if entry.timed_ms is not None:
                timed.append(entry)
            elif not entry.retired:
                self._untimed.add(entry.record_id)
        return timed
