"""The cross-rank detectors (pure): collectives matched by (group, seq), each rank's lateness,
sliding windows, and the fail-slow straggler test.

Lateness of rank r in one collective = its enqueue time minus the earliest member's, on
clocks aligned across hosts (``offsets_us``: what to subtract from a rank's clock). The rank
that entered last made the others wait: its wait caused is the sum over the other members of
(its enqueue time - theirs).

A straggler (per group, over the last ``WINDOW`` matched collectives) needs all of:
  - against the other ranks: it entered last in ``hits`` of them, more often than chance
    1/n: one-sided binomial test, Bonferroni-corrected for the n ranks it was picked from
    (collscope.stats.significance.late_rank_p), p < ALPHA;
  - against its own earlier lateness (the ``BASELINE`` collectives before the window, frozen
    while it is a straggler; three windows long, so that its median is still the rank's
    healthy lateness while the window fills with late ones): its lateness rose, one-sided
    Mann-Whitney U, p < ALPHA;
  - the rise in median lateness is at least MIN_RISE_MS and 3 x the earlier lateness's MAD
    (a scheduler's jitter on a loaded host is neither one rank's nor lasting).
It ends when the window no longer shows it (binomial p >= END_P or rise < MIN_RISE_MS / 2).
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from collscope.stats.significance import late_rank_p, rank_sum_p

WINDOW = 12
# With a baseline only one window long, an onset is judgeable only while 10-17 collectives
# past it (the window mostly late, the baseline still mostly not): a round can fall outside
# that span on a loaded host, and the straggler is never named. Three windows: 10-30.
BASELINE = 3 * WINDOW
ALPHA = 1e-3
END_P = 0.05
MIN_RISE_MS = 5.0
MAD_FACTOR = 3.0
# A (group, seq) not seen on every member after this many rounds is dropped (a rank that
# died, or entries the ring overwrote): bounded memory, no half-matched lateness.
STALE_ROUNDS = 3
# A group other than the default one is matched only once it has been known this many rounds
# (its members are learnt from who reports it).
SETTLE_ROUNDS = 2
CLOSED_KEPT = 4096

METHOD = (f"per (group, seq): lateness = enqueue time - the first member's (clocks aligned "
          f"across hosts); straggler over the last {WINDOW} matched collectives: entered last "
          f"more often than 1/n (one-sided binomial, Bonferroni x n ranks, p < {ALPHA:g}) and "
          f"lateness risen against its own earlier {BASELINE} (one-sided Mann-Whitney U, p < "
          f"{ALPHA:g}) by >= {MIN_RISE_MS:g} ms and >= {MAD_FACTOR:g} x that window's MAD")


@dataclass
class Matched:
    group: str
    seq: int
    arrivals_us: dict[int, float]          # rank -> aligned enqueue time

    @property
    def first_us(self) -> float:
        return min(self.arrivals_us.values())

    def lateness_ms(self, rank: int) -> float:
        return (self.arrivals_us[rank] - self.first_us) / 1000

    @property
    def last(self) -> int:
        return max(self.arrivals_us, key=lambda r: (self.arrivals_us[r], r))

    def wait_caused_ms(self, rank: int) -> float:
        """What the others waited for ``rank`` here (0 unless it entered last)."""
        if rank != self.last:
            return 0.0
        mine = self.arrivals_us[rank]
        return sum(mine - t for r, t in self.arrivals_us.items() if r != rank) / 1000


@dataclass
class Verdict:
    """The straggler test's numbers for one rank of one group's window."""

    rank: int
    hits: int
    window: int
    lateness_ms: float
    baseline_ms: float
    wait_caused_ms: float
    p_last: float
    p_rise: float
    since_us: float
    baseline: list[float] = field(default_factory=list)

    @property
    def rise_ms(self) -> float:
        return self.lateness_ms - self.baseline_ms


def mad(values: list[float]) -> float:
    centre = statistics.median(values)
    return statistics.median(abs(v - centre) for v in values)


def rise_p(current: list[float], earlier: list[float]) -> float:
    """One-sided Mann-Whitney U: are ``current`` values larger than ``earlier`` ones? (All
    values equal: no evidence, p = 1.)"""
    if len(set(current) | set(earlier)) < 2:
        return 1.0
    return rank_sum_p(current, earlier, "greater")


def judge(history: list[Matched], rank: int, members: int,
          frozen: list[float] | None = None) -> Verdict | None:
    """The test for ``rank`` over the newest WINDOW of ``history`` against the BASELINE before
    (or ``frozen``, its earlier window kept from when it became a straggler)."""
    current = history[-WINDOW:]
    earlier = frozen if frozen is not None else \
        [m.lateness_ms(rank) for m in history[-WINDOW - BASELINE:-WINDOW]]
    if len(current) < WINDOW or len(earlier) < WINDOW // 2:
        return None
    late = [m.lateness_ms(rank) for m in current]
    hits = sum(m.last == rank for m in current)
    baseline = statistics.median(earlier)
    threshold = baseline + max(MIN_RISE_MS, MAD_FACTOR * mad(earlier)) / 2
    since = next((m.first_us for m in current if m.lateness_ms(rank) >= threshold),
                 current[0].first_us)
    return Verdict(rank, hits, len(current), statistics.median(late), baseline,
                   sum(m.wait_caused_ms(rank) for m in current),
                   late_rank_p(hits, len(current), members), rise_p(late, earlier), since,
                   list(earlier))


def is_straggler(v: Verdict) -> bool:
    floor = max(MIN_RISE_MS, MAD_FACTOR * mad(v.baseline))
    return v.p_last < ALPHA and v.p_rise < ALPHA and v.rise_ms >= floor


def has_ended(v: Verdict) -> bool:
    return v.p_last >= END_P or v.rise_ms < MIN_RISE_MS / 2


@dataclass
class Change:
    """A straggler that started or ended in this round."""

    state: str                 # started | ended
    group: str
    verdict: Verdict


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


class Detector:
    """Per group: the last WINDOW + BASELINE matched collectives and the stragglers now
    flagged."""

    def __init__(self) -> None:
        self.history: dict[str, deque[Matched]] = {}
        self.active: dict[tuple[str, int], Verdict] = {}    # (group, rank) -> when started

    def feed(self, matched: Iterable[Matched]) -> None:
        for m in matched:
            self.history.setdefault(m.group, deque(maxlen=WINDOW + BASELINE)).append(m)

    def window(self, group: str) -> list[Matched]:
        return list(self.history.get(group, ()))[-WINDOW:]

    def changes(self) -> list[Change]:
        found: list[Change] = []
        for group, kept in self.history.items():
            history = list(kept)
            members = len(history[-1].arrivals_us)
            for (g, rank), started in list(self.active.items()):
                if g != group:
                    continue
                now = judge(history, rank, members, started.baseline)
                if now is not None and has_ended(now):
                    del self.active[(g, rank)]
                    found.append(Change("ended", group, now))
            recent = history[-WINDOW:]
            if len(recent) < WINDOW:
                continue
            hits = {r: sum(m.last == r for m in recent) for r in recent[-1].arrivals_us}
            candidate = max(hits, key=lambda r: (hits[r], r))
            if (group, candidate) in self.active:
                continue
            verdict = judge(history, candidate, members)
            if verdict is not None and is_straggler(verdict):
                self.active[(group, candidate)] = verdict
                found.append(Change("started", group, verdict))
        return found
