"""The straggler decision (pure): matched collectives in, stragglers started and ended out.

What a rank costs the others, judged against its peers in the same group at the same time.

Per matched collective of a group of n members, the *reference* is the lower median of the
arrivals (the ((n-1)//2)-th earliest, clocks aligned across hosts): by then half the members
were there. A member's *delay* is its arrival minus the reference: how long the collective was
held up by it alone. Up to half the members may be late without moving the reference, so two
stragglers in one group are each seen in full, and a pause that hits every rank at once moves
the reference with them and delays nobody.

A delay *counts* (a late collective of that rank) when it is at least the threshold
theta = max(FLOOR_MS, NOISE_FACTOR x noise, clock), noise = the window's median of (reference -
first arrival): how far apart the on-time half of the group arrives; clock = twice the largest
clock-alignment spread of the members' hosts (``Detector.clock_ms``; 0 on one host): two hosts
each aligned to within its spread can be that far apart, so a smaller delay across hosts may
be the alignment's error, not a rank's.

Over the window (the group's collectives of the last WINDOW_S seconds, at least MIN_WINDOW),
each rank's current *run* of late collectives: from its first late collective after the last
gap of more than RUN_GAPS x its median gap + RUN_SLACK collectives without one (none: the run
is over). Then
  cost(r) = the sum of r's counted delays in its run / the run's duration: milliseconds of the
            others' wait per second, or as a share, of the job's time while it is slow;
  candidates, the costliest first, cost share >= MIN_SHARE and >= MIN_HITS late collectives;
  the test, for the top j candidates (j = 1, 2, ... up to MAX_SET and n/2, the largest j that
  passes is kept; two stragglers at once): were the K collectives late by at least half the
  set's median delay, of all members since the earliest of their runs began (at least the
  last MIN_WINDOW collectives: peers at the same time), spread over the n members at random,
  the top j would hold their share j/n: one-sided binomial, Bonferroni x C(n, j), p < ALPHA;
  and each of them against the members outside the set
  (binomial at 1 / (n - j + 1), Bonferroni x n), p < ALPHA: no healthy rank rides along.
A flagged rank stays flagged while its cost share is >= MIN_SHARE / 2 and its own test
p < END_P; a run that is over ends it. That lower bar only keeps a straggler already named: a
new one is said only while its deciding test has p < ALPHA and its cost >= MIN_SHARE.

Which flagged rank is the origin, which ones follow it, and when a pair is one straggler:
collscope.watch.origin. The shape (persistent, onset, intermittent) is read here when a
straggler starts: onset when the rank's delays before its first late collective were lower
(one-sided Mann-Whitney U, p < ALPHA, the change on top of the peer test), intermittent when
fewer than PERSISTENT_SHARE of the collectives since then were late.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat

from collscope.stats.significance import binomial_tail, late_rank_p, rank_sum_p
from collscope.watch import origin
from collscope.watch.match import Matched
from collscope.watch.origin import GroupVerdict

WINDOW_S = 15.0
MIN_WINDOW = 12
# Kept per group: the window and, before it, the rank's earlier delays for the onset test.
HISTORY_S = 3 * WINDOW_S
MAX_KEPT = 4096
# Matched collectives kept per group for the window records (lateness, wait caused).
RECORD_WINDOW = 12
FLOOR_MS = 0.3
NOISE_FACTOR = 4.0
MIN_SHARE = 0.03
# At most this many ranks of one group flagged together (two stragglers at once).
MAX_SET = 8
MIN_HITS = 5
ALPHA = 1e-3
END_P = 0.05
# A rank's run of late collectives is over after RUN_GAPS x its median gap + RUN_SLACK
# collectives without one (a persistent straggler's after 7, one late every 3rd after 13).
RUN_GAPS = 3
RUN_SLACK = 4
PERSISTENT_SHARE = 0.7
# A straggler of a rank in several groups is said once it has held for this many rounds (a
# follower can look like an origin for a round while its origin's group fills).
CONFIRM_ROUNDS = 2
# The ranks of a straggler named, and its followers, are not named again while it is named and
# for WINDOW_S after it ended (their windows still hold the delays it caused), its followers
# not as a pair or group for 2 x WINDOW_S: their flags can outlast
# the origin's (a pipeline stage downstream keeps its own runs).

METHOD = (f"per collective: delay = arrival - the lower median arrival (clocks aligned); late "
          f"when >= max({FLOOR_MS:g} ms, {NOISE_FACTOR:g} x the on-time half's spread, 2 x "
          f"the hosts' clock-alignment spread); over "
          f"the last {WINDOW_S:g} s (>= {MIN_WINDOW} collectives): cost = late delays / time, "
          f">= {MIN_SHARE:.0%} of it and >= {MIN_HITS} late collectives, and late more often "
          f"than the group's other members (one-sided binomial, Bonferroni x n, "
          f"p < {ALPHA:g}); ends below {MIN_SHARE / 2:.0%} or p >= {END_P:g}")


@dataclass(slots=True)
class Scored:
    """One matched collective as the test reads it."""

    seq: int
    first_us: float
    spread_ms: float                     # reference - first arrival
    delays_ms: dict[int, float]          # members at least FLOOR_MS after the reference


def score(m: Matched) -> Scored:
    times = sorted(m.arrivals_us.values())
    reference = times[(len(times) - 1) // 2]
    floor_us = FLOOR_MS * 1000
    return Scored(m.seq, times[0], (reference - times[0]) / 1000,
                  {r: (t - reference) / 1000 for r, t in m.arrivals_us.items()
                   if t - reference >= floor_us})


@dataclass
class GroupState:
    """One group's kept collectives: ``scored`` over HISTORY_S (the onset test), ``window``
    over WINDOW_S (at least MIN_WINDOW) with each rank's delays summed as it moves
    (``load_ms``), ``recent`` for the window records."""

    members: int = 0
    scored: deque[Scored] = field(default_factory=lambda: deque(maxlen=MAX_KEPT))
    window: deque[Scored] = field(default_factory=deque)
    load_ms: dict[int, float] = field(default_factory=dict)
    recent: deque[Matched] = field(default_factory=lambda: deque(maxlen=RECORD_WINDOW))
    changed: bool = False

    def add(self, s: Scored) -> None:
        self.scored.append(s)
        self.window.append(s)
        for rank, delay in s.delays_ms.items():
            self.load_ms[rank] = self.load_ms.get(rank, 0.0) + delay
        cut = s.first_us - WINDOW_S * 1e6
        while len(self.window) > MIN_WINDOW and self.window[0].first_us < cut:
            for rank, delay in self.window.popleft().delays_ms.items():
                left = self.load_ms[rank] - delay
                if left > 1e-9:
                    self.load_ms[rank] = left
                else:
                    del self.load_ms[rank]
        cut = s.first_us - HISTORY_S * 1e6
        while self.scored[0].first_us < cut:
            self.scored.popleft()


def current_run(indices: list[int], length: int) -> int | None:
    """Where the rank's current run of late collectives begins (an index into the window of
    ``length``): its first late collective after the last gap longer than RUN_GAPS x its
    median gap + RUN_SLACK; None when the run is over (that long since its last one)."""
    gaps = [b - a for a, b in zip(indices, indices[1:])]
    allowed = RUN_GAPS * (statistics.median(gaps) if gaps else 1) + RUN_SLACK
    if length - 1 - indices[-1] > allowed:
        return None
    start = 0
    for i, gap in enumerate(gaps):
        if gap > allowed:
            start = i + 1
    return indices[start]


def set_p(hits: list[int], total: int, members: int) -> float:
    """The top ``len(hits)`` ranks together hold sum(hits) of ``total`` late collectives:
    one-sided binomial at j/n, Bonferroni x C(n, j) (the sets of j it was picked from)."""
    j = len(hits)
    return min(1.0, math.comb(members, j) * binomial_tail(sum(hits), total, j / members))


def rank_p(k: int, rest: int, members: int, outside: int) -> float:
    """One rank's k late collectives against the ``rest`` of the ``outside`` other members
    not flagged with it: one-sided binomial at 1/(outside + 1), Bonferroni x n."""
    pool = outside + 1
    return min(1.0, late_rank_p(k, k + rest, pool) * members / pool) if k else 1.0


def judge(state: GroupState, group: str, flagged: set[int], clock_ms: float = 0.0) -> tuple[
        dict[int, GroupVerdict], dict[int, float]]:
    """Verdicts of the ranks flagged now (the largest set of at most MAX_SET that passes, and
    the ``flagged`` ones that still hold) and every rank's load: all its delays of at least
    FLOOR_MS summed per second of the window (what collscope.watch.origin compares)."""
    window = state.window
    if len(window) < MIN_WINDOW:
        return {}, {}
    newest = window[-1].first_us
    period_us = (newest - window[0].first_us) / (len(window) - 1)
    window_s = max((newest - window[0].first_us + period_us) / 1e6, 1e-3)
    load = {r: ms / window_s for r, ms in state.load_ms.items()}
    # A run of at least MIN_HITS collectives costs at most its rank's load over that span.
    bound = max(state.load_ms.values(), default=0.0) / (MIN_HITS * period_us / 1000)
    if not flagged and bound < MIN_SHARE:
        return {}, load          # no rank can cost MIN_SHARE: nothing to test
    theta = max(FLOOR_MS, NOISE_FACTOR * statistics.median(s.spread_ms for s in window),
                clock_ms)
    late: dict[int, list[int]] = {}
    delays: dict[int, list[float]] = {}
    for index, s in enumerate(window):
        for rank, delay in s.delays_ms.items():
            if delay >= theta:
                late.setdefault(rank, []).append(index)
                delays.setdefault(rank, []).append(delay)
    runs: dict[int, tuple[int, float, float]] = {}       # rank -> (since, cost ms, span s)
    for rank, indices in late.items():
        since = current_run(indices, len(window))
        if since is not None:
            span_s = (newest - window[since].first_us + period_us) / 1e6
            cost = sum(d for i, d in zip(indices, delays[rank]) if i >= since)
            runs[rank] = (since, cost, span_s)

    def share(rank: int) -> float:
        return runs[rank][1] / runs[rank][2] / 1000 if rank in runs else 0.0

    n = len(window)

    def counted(ranks: list[int]) -> tuple[dict[int, int], int]:
        """Each member's collectives late by as much as ``ranks`` are (at least half the
        median delay of their runs), and all of them, since the earliest of their runs
        began (at least the last MIN_WINDOW collectives): peers at the same time."""
        start = min([runs[r][0] for r in ranks] + [n - MIN_WINDOW])
        level = min(statistics.median(d for i, d in zip(late[r], delays[r]) if i >= runs[r][0])
                    for r in ranks) / 2
        hits = {r: sum(i >= start and d >= level for i, d in zip(v, delays[r]))
                for r, v in late.items()}
        return hits, sum(hits.values())

    members = state.members
    order = sorted(runs, key=lambda r: (-share(r), -len(late[r]), r))
    chosen: list[int] = []
    p_of: dict[int, float] = {}
    tested: dict[int, tuple[int, int]] = {}          # rank -> (its hits, all) in its test
    for j in range(1, min(MAX_SET, max(1, members // 2), len(order)) + 1):
        top = order[:j]
        if len(late[top[-1]]) < MIN_HITS or share(top[-1]) < MIN_SHARE:
            break
        hits, total = counted(top)
        p_top = set_p([hits[r] for r in top], total, members)
        rest = total - sum(hits[r] for r in top)
        each = {r: max(p_top, rank_p(hits[r], rest, members, members - j)) for r in top}
        if max(each.values()) < ALPHA:
            chosen, p_of = top, each
            tested = {r: (hits[r], total) for r in top}
    keep = set(chosen)
    for rank in sorted(flagged - keep):
        if rank not in runs:
            continue
        hits, total = counted([rank])
        rest = total - sum(hits.get(r, 0) for r in keep | flagged)
        p = rank_p(hits[rank], rest, members, members - len(keep | flagged))
        if p < END_P and share(rank) >= MIN_SHARE / 2:
            keep.add(rank)
            p_of[rank] = p
            tested[rank] = (hits[rank], total)
    out: dict[int, GroupVerdict] = {}
    for rank in keep:
        since, cost, span_s = runs[rank]
        mine = [d for i, d in zip(late[rank], delays[rank]) if i >= since]
        out[rank] = GroupVerdict(
            group, rank, members, tested[rank][0], tested[rank][1], n - since, span_s, cost,
            theta, p_of[rank], statistics.median(mine), window[since].first_us,
            len(mine) / (n - since))
    return out, load


def onset_p(state: GroupState, rank: int, since_us: float) -> tuple[float | None, float]:
    """One-sided Mann-Whitney U: the rank's delays since ``since_us`` above its delays before
    (None: fewer than MIN_WINDOW collectives before, so no earlier to compare with), and the
    median of those before (0 without any)."""
    before = [s.delays_ms.get(rank, 0.0) for s in state.scored if s.first_us < since_us]
    after = [s.delays_ms.get(rank, 0.0) for s in state.scored if s.first_us >= since_us]
    baseline = statistics.median(before) if before else 0.0
    if len(before) < MIN_WINDOW or len(set(before) | set(after)) < 2:
        return None, baseline
    return rank_sum_p(after, before, "greater"), baseline


def shape_of(straggler: origin.Straggler, p_rise: float | None) -> str:
    if straggler.kind != "rank":
        return straggler.kind
    if straggler.verdict.late_share < PERSISTENT_SHARE:
        return "intermittent"
    return "onset" if p_rise is not None and p_rise < ALPHA else "persistent"


@dataclass
class Change:
    """A straggler that started or ended in this round."""

    state: str                 # started | ended
    straggler: origin.Straggler
    shape: str
    p_rise: float | None       # the onset test (None: nothing earlier to compare with)
    baseline_ms: float = 0.0   # its median delay before it started

    @property
    def verdict(self) -> GroupVerdict:
        return self.straggler.verdict


class Detector:
    """Per group the kept collectives; per (group, rank) the flags; the stragglers named."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupState] = {}
        self.flags: dict[tuple[str, int], GroupVerdict] = {}
        self.costs: dict[str, dict[int, float]] = {}
        self.members: dict[str, set[int]] = {}
        self.named: dict[tuple[int, ...], Change] = {}
        self.seen: dict[tuple[int, ...], int] = {}      # key -> rounds it has held
        # ranks of stragglers named, and until when (data time, us); their followers
        self.covered: dict[int, float] = {}
        self.trailing: dict[int, float] = {}
        # rank -> its host's clock-alignment spread, ms (the aggregator sets it per epoch;
        # empty on one host): a group's delays count from twice its members' largest
        self.clock_ms: dict[int, float] = {}

    @property
    def history(self) -> dict[str, deque[Matched]]:
        return {g: s.recent for g, s in self.groups.items() if s.recent}

    @property
    def active(self) -> set[tuple[str, int]]:
        """(group, rank) of every rank named now, in the groups where it is flagged."""
        return {(g, r) for change in self.named.values()
                for r in change.straggler.ranks for g in change.straggler.groups
                if (g, r) in self.flags}

    def feed(self, matched: Iterable[Matched]) -> None:
        for m in matched:
            state = self.groups.setdefault(m.group, GroupState())
            state.members = len(m.arrivals_us)
            self.members[m.group] = set(m.arrivals_us)
            state.recent.append(m)
            state.add(score(m))
            state.changed = True

    def window(self, group: str) -> list[Matched]:
        state = self.groups.get(group)
        return list(state.recent) if state else []

    def _judge_groups(self) -> None:
        for group, state in self.groups.items():
            if not state.changed:
                continue
            state.changed = False
            before = {r for g, r in self.flags if g == group}
            clock = 2 * max(map(self.clock_ms.get, self.members[group], repeat(0.0)),
                            default=0.0) if self.clock_ms else 0.0
            verdicts, self.costs[group] = judge(state, group, before, clock)
            for rank in before - verdicts.keys():
                del self.flags[(group, rank)]
            self.flags.update({(group, r): v for r, v in verdicts.items()})

    def changes(self) -> list[Change]:
        self._judge_groups()
        now = {tuple(s.ranks): s for s in origin.explain(self.flags, self.costs, self.members)}
        found: list[Change] = []
        newest = max((s.scored[-1].first_us for s in self.groups.values() if s.scored),
                     default=0.0)
        for key, change in self.named.items():
            latest = now.get(key, change.straggler)
            for rank in latest.ranks:
                self.covered[rank] = newest + WINDOW_S * 1e6
            for rank in set(latest.followers) | set(change.straggler.followers):
                # its window holds the delays the origin caused for WINDOW_S more
                self.covered[rank] = max(self.covered.get(rank, 0.0), newest + WINDOW_S * 1e6)
                self.trailing[rank] = newest + 2 * WINDOW_S * 1e6
        self.covered = {r: until for r, until in self.covered.items() if until >= newest}
        self.trailing = {r: until for r, until in self.trailing.items() if until >= newest}
        for key in [k for k in self.named if k not in now]:
            old = self.named.pop(key)
            found.append(Change("ended", old.straggler, old.shape, old.p_rise,
                                old.baseline_ms))
        self.seen = {k: self.seen.get(k, 0) + 1 for k in now}
        for key, straggler in now.items():
            if key in self.named:       # said once, with the numbers that decided it
                continue
            several = any(len([g for g, m in self.members.items() if r in m]) > 1
                          for r in straggler.ranks)
            covered = self.covered if straggler.kind == "rank" else \
                self.covered | self.trailing
            if several and self.seen[key] < CONFIRM_ROUNDS or all(r in covered for r in key):
                continue
            v = straggler.verdict
            if v.p >= ALPHA or straggler.cost_ms_per_s / 1000 < MIN_SHARE:
                continue     # flags kept by the lower bar to stay only keep one already named
            p_rise, baseline = onset_p(self.groups[v.group], v.rank, v.since_us)
            change = Change("started", straggler, shape_of(straggler, p_rise), p_rise, baseline)
            self.named[key] = change
            found.append(change)
        return found
