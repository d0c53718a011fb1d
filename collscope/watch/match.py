"""Collectives matched across ranks (pure): every rank's arrivals joined by (group, seq).

A (group, seq) is matched once every member of the group reported it; members of the default
group are all ranks, a sub-group's are the ranks that report it (matched once the group has been
known SETTLE_ROUNDS rounds). One not seen on every member within STALE_ROUNDS rounds is dropped
(a rank that died, or entries the ring overwrote), so no half-matched lateness is judged.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat
from operator import sub

from collscope.watch.columns import ABSENT, HostRecord

# A (group, seq) not seen on every member after this many rounds is dropped (a rank that
# died, or entries the ring overwrote): bounded memory, no half-matched lateness.
STALE_ROUNDS = 3
# A group other than the default one is matched only once it has been known this many rounds
# (its members are learnt from who reports it).
SETTLE_ROUNDS = 2
CLOSED_KEPT = 4096


@dataclass
class Matched:
    group: str
    seq: int
    arrivals_us: dict[int, float]          # rank -> aligned enqueue time

    @cached_property
    def first_us(self) -> float:
        return min(self.arrivals_us.values())

    def lateness_ms(self, rank: int) -> float:
        return (self.arrivals_us[rank] - self.first_us) / 1000

    @cached_property
    def last(self) -> int:
        # the latest arrival, the highest rank among equal ones
        return max(zip(self.arrivals_us.values(), self.arrivals_us))[1]

    def wait_caused_ms(self, rank: int) -> float:
        """What the others waited for ``rank`` here (0 unless it entered last)."""
        if rank != self.last:
            return 0.0
        mine = self.arrivals_us[rank]
        # in the members' order as before (its own term is 0), at C speed
        return sum(map(sub, repeat(mine), self.arrivals_us.values())) / 1000


class Matcher:
    """Joins the ranks' arrivals into matched collectives, group by group (bounded)."""

    def __init__(self, world: Iterable[int], default_group: str = "0") -> None:
        self.world = sorted(world)
        self.default_group = default_group
        self.members: dict[str, set[int]] = {default_group: set(self.world)}
        self.first_round: dict[str, int] = {default_group: 0}
        self._open: dict[tuple[str, int], tuple[int, dict[int, float]]] = {}
        self._closed: set[tuple[str, int]] = set()     # recently closed (arrivals repeat)
        self._closed_order: deque[tuple[str, int]] = deque()
        self.dropped = 0

    def add(self, rank: int, arrivals: dict[str, list[tuple[int, int]]], offset_us: float,
            round_: int) -> None:
        for group, items in arrivals.items():
            self.members.setdefault(group, set()).add(rank)
            self.first_round.setdefault(group, round_)
            for seq, us in items:
                if (group, seq) in self._closed:
                    continue
                seen, times = self._open.setdefault((group, seq), (round_, {}))
                times[rank] = us - offset_us

    def add_host(self, record: HostRecord, offset_us: float, round_: int) -> None:
        """One host's record (one clock offset): what :meth:`add` does for each of its
        ranks, in one step per collective not matched yet (each record repeats the previous
        interval's, matched by now)."""
        ranks, n = record.ranks, len(record.ranks)
        opened, closed = self._open, self._closed
        for group, seqs, firsts, offsets in record.columns():
            members = self.members.get(group)
            if members is None:
                members = self.members[group] = set()
            absent = ABSENT in offsets
            members.update(ranks if not absent else
                           {ranks[i % n] for i, o in enumerate(offsets) if o != ABSENT})
            self.first_round.setdefault(group, round_)
            for k, (seq, first) in enumerate(zip(seqs, firsts)):
                key = (group, seq)
                if key in closed:
                    continue
                found = opened.get(key)
                if found is None:
                    found = opened[key] = (round_, {})
                times = found[1]
                row = offsets[k * n:(k + 1) * n]
                if absent and ABSENT in row:
                    times.update((r, first + o - offset_us)
                                 for r, o in zip(ranks, row) if o != ABSENT)
                else:
                    times.update(zip(ranks, [first + o - offset_us for o in row]))

    def close(self, round_: int) -> list[Matched]:
        """The collectives now seen on every member, oldest first; stale ones dropped."""
        done: list[Matched] = []
        for key in sorted(self._open):
            group, seq = key
            seen, times = self._open[key]
            members = self.members[group]
            settled = group == self.default_group or \
                round_ - self.first_round[group] >= SETTLE_ROUNDS
            if settled and len(members) >= 2 and members <= times.keys():
                done.append(Matched(group, seq, {r: times[r] for r in members}))
                self._forget(key)
            elif round_ - seen > STALE_ROUNDS:
                self.dropped += 1
                self._forget(key)
        return done

    def _forget(self, key: tuple[str, int]) -> None:
        del self._open[key]
        self._closed.add(key)
        self._closed_order.append(key)
        if len(self._closed_order) > CLOSED_KEPT:
            self._closed.discard(self._closed_order.popleft())
