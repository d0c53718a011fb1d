"""A host's summaries as one record in columns (pure): what a host leader sends rank 0.

Rank 0 reads one record per host per round; at thousands of hosts what it costs is the
number of Python steps per rank, and the bytes through the job's store. So a record holds
its ranks' arrivals by collective, not by rank: per (group, seq), the host's earliest
arrival and each rank's microseconds after it (-1: that rank did not report it), which the
matcher joins in one step per host and collective (and skips whole once matched). The rest
of each rank's summary (completed counts, oldest pending collective, timed calls, round,
time), which rank 0 reads only for the ranks its window records name, stays encoded
(msgspec.Raw) until asked for. Integers are small (offsets and steps, not absolute times),
packed as MessagePack (msgspec) and compressed (zlib).

Nothing is lost: :meth:`HostRecord.summary` gives back each rank's summary as it published
it, but without its arrivals (those went to the matcher), which is what rank 0 keeps.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence

import msgspec

from collscope.watch.bandwidth import Timed
from collscope.watch.summary import Pending, Summary

COMPRESS_LEVEL = 6
ABSENT = -1


class _Group(msgspec.Struct, array_like=True):
    seq_steps: list[int]       # the first seq, then each one's step from the previous
    first_steps: list[int]     # per seq, the host's earliest arrival (us), as a step from
    #                            the previous seq's (the first from the record's base_us)
    offsets: list[int]         # per seq, per rank of the record: us after that earliest


class _Rest(msgspec.Struct, array_like=True):
    """The ranks' summaries less their arrivals, in columns (index: the rank's position)."""

    round_steps: list[int]                                  # each from the first rank's
    time_ms: list[int]                                      # the first absolute, then steps
    completed: dict[str, dict[str, list[int]]]              # group: op: count per rank
    pending: list[tuple[int, str, str, int, float]] = []    # (index, group, op, seq, age_s)
    timed: list[tuple[int, str, int, dict[str, tuple[int, int, float]]]] = []


class _Record(msgspec.Struct, array_like=True):
    time: float
    leader: int
    interval_s: float
    rank_steps: list[int]      # the first rank, then each one's step from the previous
    base_us: int
    groups: dict[str, _Group]
    rest: msgspec.Raw


_ENCODER = msgspec.msgpack.Encoder()
_RECORD = msgspec.msgpack.Decoder(_Record)
_REST = msgspec.msgpack.Decoder(_Rest)


def _steps(values: Sequence[int]) -> list[int]:
    return [values[0], *(b - a for a, b in zip(values, values[1:]))] if values else []


def _summed(steps: Sequence[int], start: int = 0) -> list[int]:
    out, total = [], start
    for step in steps:
        total += step
        out.append(total)
    return out


def encode(now: float, leader: int, interval_s: float,
           summaries: Sequence[tuple[int, Summary]]) -> bytes:
    """One host's record from its ranks' summaries (as they published them)."""
    ranks = [rank for rank, _ in summaries]
    n = len(ranks)
    by_group: dict[str, dict[int, list[int]]] = {}      # group: seq: us per rank index
    for index, (_, summary) in enumerate(summaries):
        for group, items in summary.arrivals.items():
            seqs = by_group.setdefault(group, {})
            for seq, us in items:
                seqs.setdefault(seq, [ABSENT] * n)[index] = us
    base = min((min(u for u in row if u != ABSENT) for seqs in by_group.values()
                for row in seqs.values()), default=0)
    groups = {}
    for group, seqs in by_group.items():
        order = sorted(seqs)
        firsts = [min(u for u in seqs[seq] if u != ABSENT) for seq in order]
        groups[group] = _Group(_steps(order), _steps([base, *firsts])[1:], [
            ABSENT if u == ABSENT else u - first
            for seq, first in zip(order, firsts) for u in seqs[seq]])
    completed: dict[str, dict[str, list[int]]] = {}
    for index, (_, summary) in enumerate(summaries):
        for group, ops in summary.completed.items():
            for op, count in ops.items():
                completed.setdefault(group, {}).setdefault(op, [ABSENT] * n)[index] = count
    round0 = summaries[0][1].round if summaries else 0
    rest = _Rest(
        [round0, *(s.round - round0 for _, s in summaries[1:])] if summaries else [],
        _steps([round(s.time * 1000) for _, s in summaries]), completed,
        [(i, p.group, p.collective, p.seq, p.age_s) for i, (_, s) in enumerate(summaries)
         if (p := s.pending) is not None],
        [(i, g, members, {op: (t.calls, t.size_bytes, t.duration_us) for op, t in ops.items()})
         for i, (_, s) in enumerate(summaries) for g, (members, ops) in s.timed.items()])
    record = _Record(round(now, 3), leader, interval_s, _steps(ranks), base, groups,
                     msgspec.Raw(_ENCODER.encode(rest)))
    return zlib.compress(_ENCODER.encode(record), COMPRESS_LEVEL)


class HostRecord:
    """A host's record as rank 0 reads it: its collectives' arrivals by (group, seq), and
    each rank's summary (less its arrivals) decoded when asked for."""

    def __init__(self, blob: bytes) -> None:
        self._record = _RECORD.decode(zlib.decompress(blob))
        self.time = self._record.time
        self.leader = self._record.leader
        self.interval_s = self._record.interval_s
        self.ranks = _summed(self._record.rank_steps)
        self._summaries: dict[int, Summary] | None = None

    def columns(self) -> Iterator[tuple[str, list[int], list[int], list[int]]]:
        """Per group: its seqs, the host's earliest arrival (us) at each, and the offsets
        (per seq, per rank of ``ranks``: us after that earliest; ABSENT: not reported)."""
        base = self._record.base_us
        for group, columns in self._record.groups.items():
            yield (group, _summed(columns.seq_steps), _summed(columns.first_steps, base),
                   columns.offsets)

    def summary(self, rank: int) -> Summary | None:
        if self._summaries is None:
            self._summaries = self._decode_rest()
        return self._summaries.get(rank)

    def _decode_rest(self) -> dict[int, Summary]:
        rest = _REST.decode(self._record.rest)
        rounds = [rest.round_steps[0], *(rest.round_steps[0] + s for s in rest.round_steps[1:])]
        out = {}
        for index, (rank, round_, ms) in enumerate(zip(self.ranks, rounds,
                                                       _summed(rest.time_ms))):
            completed = {group: {op: counts[index] for op, counts in ops.items()
                                 if counts[index] != ABSENT}
                         for group, ops in rest.completed.items()}
            out[rank] = Summary(round_, ms / 1000, {}, {g: c for g, c in completed.items() if c})
        for index, group, op, seq, age_s in rest.pending:
            out[self.ranks[index]].pending = Pending(group, op, seq, age_s)
        for index, group, members, ops in rest.timed:
            out[self.ranks[index]].timed[group] = (
                members, {op: Timed(c, b, us) for op, (c, b, us) in ops.items()})
        return out
