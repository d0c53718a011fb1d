"""One rank's summary of an interval, as it travels through the store (a few hundred bytes).

Per process group, the new collectives' sequence numbers and enqueue times: runs of
consecutive sequence numbers as ``[first_seq, [dt_us, ...]]`` where each dt is the time since
the previous entry (the first since ``base_us``), so 20 collectives cost ~140 bytes. Plus the
completed count per (group, collective), and this rank's oldest pending collective. Where the
Flight Recorder has durations (NCCL/RCCL with TORCH_NCCL_ENABLE_TIMING=1), per group its size
and per collective the interval's timed calls summed (calls, bytes, microseconds:
collscope.watch.bandwidth), ~30 bytes per collective; nothing where it has none (gloo).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import msgspec

from collscope.parsers.flight_recorder import FlightEntry
from collscope.watch.bandwidth import Timed

# Newest entries kept per group per interval (the detectors need a window, not every call).
MAX_PER_GROUP = 48


@dataclass
class Pending:
    group: str
    collective: str
    seq: int
    age_s: float


class Wire(msgspec.Struct):
    """A summary as :meth:`Summary.encode` writes it, decoded typed (msgspec): rank 0
    decodes thousands of them a round from the host records."""

    r: int
    t: float
    b: int
    g: dict[str, list[tuple[int, list[int]]]]
    c: dict[str, dict[str, int]]
    p: tuple[str, str, int, float] | None = None
    w: dict[str, tuple[int, dict[str, tuple[int, int, float]]]] = msgspec.field(
        default_factory=dict)


_WIRE = msgspec.json.Decoder(Wire)


@dataclass
class Summary:
    round: int
    time: float
    arrivals: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # group: (seq, us)
    completed: dict[str, dict[str, int]] = field(default_factory=dict)   # group: op: count
    pending: Pending | None = None
    # group: (members, op: the interval's calls with a duration, summed)
    timed: dict[str, tuple[int, dict[str, Timed]]] = field(default_factory=dict)

    def encode(self) -> str:
        groups: dict[str, list[Any]] = {}
        base = min((us for items in self.arrivals.values() for _, us in items), default=0)
        for group, items in self.arrivals.items():
            runs: list[Any] = []
            previous_seq, previous_us = None, base
            for seq, us in items:
                if previous_seq is None or seq != previous_seq + 1:
                    runs.append([seq, []])
                runs[-1][1].append(us - previous_us)
                previous_seq, previous_us = seq, us
            groups[group] = runs
        out: dict[str, Any] = {"r": self.round, "t": round(self.time, 3), "b": base,
                               "g": groups, "c": self.completed}
        if self.pending is not None:
            p = self.pending
            out["p"] = [p.group, p.collective, p.seq, round(p.age_s, 3)]
        if self.timed:
            out["w"] = {g: [n, {op: [t.calls, t.size_bytes, round(t.duration_us, 1)]
                                for op, t in ops.items()}]
                        for g, (n, ops) in self.timed.items()}
        return json.dumps(out, separators=(",", ":"))

    @classmethod
    def decode(cls, text: str | bytes) -> Summary:
        return cls.from_wire(_WIRE.decode(text))

    @classmethod
    def from_wire(cls, wire: Wire) -> Summary:
        """A summary from its typed wire form (a host leader's record carries them whole)."""
        arrivals: dict[str, list[tuple[int, int]]] = {}
        for group, runs in wire.g.items():
            items = arrivals.setdefault(group, [])
            us = wire.b
            for first, deltas in runs:
                times = list(accumulate(deltas, initial=us))
                us = times[-1]
                items.extend(zip(range(first, first + len(deltas)), times[1:]))
        pending = Pending(*wire.p) if wire.p else None
        timed = {g: (n, {op: Timed(c, b, us) for op, (c, b, us) in ops.items()})
                 for g, (n, ops) in wire.w.items()}
        return cls(wire.r, wire.t, arrivals, wire.c, pending, timed)


def summarise(round_: int, now: float, new: Iterable[FlightEntry],
              oldest: FlightEntry | None,
              completed: dict[str, dict[str, int]],
              timed: dict[str, tuple[int, dict[str, Timed]]] | None = None) -> Summary:
    """This interval's summary from the FR entries new since the last one; ``completed`` is
    :class:`Counter`'s running count per group and collective, ``timed`` the interval's
    timed calls (bandwidth.tally of the read's ``timed`` entries)."""
    arrivals: dict[str, list[tuple[int, int]]] = {}
    for entry in new:
        if entry.is_p2p:
            continue
        arrivals.setdefault(entry.group, []).append(
            (entry.collective_seq_id, entry.time_created_ns // 1000))
    for items in arrivals.values():
        items.sort()
        del items[:-MAX_PER_GROUP]
    pending = None
    if oldest is not None:
        pending = Pending(oldest.group, oldest.op, oldest.collective_seq_id,
                          max(0.0, now - oldest.time_created_ns / 1e9))
    return Summary(round_, now, arrivals, {g: dict(ops) for g, ops in completed.items()},
                   pending, timed or {})


class Counter:
    """Collectives completed per (group, op), each entry counted once when seen done."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}
        self._waiting: dict[int, FlightEntry] = {}     # record id -> entry seen pending

    def update(self, new: list[FlightEntry], pending_ids: set[int]) -> None:
        for entry in new:
            self._waiting[entry.record_id] = entry
        for record_id in [r for r in self._waiting if r not in pending_ids]:
            entry = self._waiting.pop(record_id)
            ops = self.counts.setdefault(entry.group, {})
            ops[entry.op] = ops.get(entry.op, 0) + 1
