"""Across ranks (pure): the same collective call on every rank, its skew, the late rank.

A call is matched across ranks by (process group, sequence number) where the trace records
"Seq", else by its position among the rank's calls of the same collective, group and size.
The late rank of a call is the one that was ready for it last (its kernel started last; on
gloo, it issued the c10d op last): the others sat in the collective waiting for it. Times are
compared on the traces' own clocks, so they are only meaningful when the ranks' clocks agree
(one host, or hosts with synchronised clocks).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from collscope.trace.calls import CommCall
from collscope.trace.rank import RankTrace
from collscope.trace.table import window_calls

# A rank is a straggler when the binomial test rejects "last as often as any other rank"
# at this level.
STRAGGLER_ALPHA = 0.01


@dataclass
class MatchedCall:
    key: tuple[object, ...]
    collective: str
    size_bytes: int | None
    starts_us: dict[int, float]       # rank -> when that rank was ready (CommCall.ready_us)
    late_rank: int
    skew_us: float                    # latest ready - earliest ready
    wait_us: float                    # sum over the other ranks of (latest ready - theirs)
    delay_us: float                   # latest ready - the next latest: what the late rank cost
    step: int | None = None           # ProfilerStep of the call (on the first rank)


@dataclass
class RankLateness:
    rank: int
    late_calls: int
    wait_caused_ms: float             # the others' waits for it, summed over ranks
    delay_per_step_ms: float          # per step, the most it delayed one call (calls of a
                                      # step overlap, so their delays do not add up)


@dataclass
class Straggler:
    rank: int
    late_calls: int
    calls: int
    ranks: int
    p_value: float
    test: str


@dataclass
class Across:
    matched: list[MatchedCall]
    ranks: list[RankLateness]
    straggler: Straggler | None
    unmatched_calls: int
    method: str


def _keys(calls: list[CommCall]) -> list[tuple[object, ...]]:
    counters: dict[tuple[object, ...], int] = defaultdict(int)
    keys: list[tuple[object, ...]] = []
    for call in sorted(calls, key=lambda c: c.ready_us):
        if call.seq is not None:
            keys.append(("seq", call.group, call.seq))
            continue
        what = (call.collective, call.group, call.size_bytes)
        keys.append(("order", *what, counters[what]))
        counters[what] += 1
    return keys


def match(ranks: list[RankTrace], whole: bool = True) -> Across:
    """Calls present on every rank, matched; per-rank lateness; the straggler verdict.
    ``whole``: every call of the traces (more calls, a stronger test), else only the calls of
    the selected steps."""
    per_rank: dict[int, dict[tuple[object, ...], CommCall]] = {}
    for trace in ranks:
        ordered = sorted(trace.calls if whole else window_calls(trace),
                         key=lambda c: c.ready_us)
        per_rank[trace.rank] = dict(zip(_keys(ordered), ordered))
    rank_ids = sorted(per_rank)
    common = set.intersection(*(set(calls) for calls in per_rank.values())) if rank_ids else set()
    total = sum(len(calls) for calls in per_rank.values())
    matched = []
    for key in common:
        starts = {r: per_rank[r][key].ready_us for r in rank_ids}
        late = max(starts, key=lambda r: (starts[r], r))
        latest = starts[late]
        others = [s for r, s in starts.items() if r != late]
        first = per_rank[rank_ids[0]][key]
        matched.append(MatchedCall(key, first.collective, first.size_bytes, starts, late,
                                   latest - min(starts.values()),
                                   sum(latest - s for s in others), latest - max(others),
                                   first.step))
    matched.sort(key=lambda m: min(m.starts_us.values()))
    steps = {m.step for m in matched}
    lateness = []
    for r in rank_ids:
        worst: dict[int | None, float] = defaultdict(float)
        for m in matched:
            if m.late_rank == r:
                worst[m.step] = max(worst[m.step], m.delay_us)
        lateness.append(RankLateness(
            r, sum(1 for m in matched if m.late_rank == r),
            sum(m.wait_us for m in matched if m.late_rank == r) / 1e3,
            sum(worst.values()) / 1e3 / max(1, len(steps))))
    return Across(matched, lateness, _straggler(lateness, len(matched)),
                  total - len(matched) * len(rank_ids),
                  ("all calls of the traces" if whole else "calls of the selected steps")
                  + " matched by (process group, Seq) where recorded, else by order within "
                  "(collective, group, size); late rank = the one ready last on the traces' "
                  "clocks (kernel start; gloo: the issuing c10d op)")


def _straggler(lateness: list[RankLateness], calls: int) -> Straggler | None:
    n = len(lateness)
    if n < 2 or calls < 2:
        return None
    from collscope.bench.stats import late_rank_p

    worst = max(lateness, key=lambda r: r.late_calls)
    # The most-late rank is picked after looking: Bonferroni over the n ranks.
    p_value = late_rank_p(worst.late_calls, calls, n)
    if p_value < STRAGGLER_ALPHA:
        return Straggler(worst.rank, worst.late_calls, calls, n, p_value,
                         f"one-sided binomial test of {worst.late_calls} late calls of {calls} "
                         f"against 1/{n}, Bonferroni-corrected for {n} ranks")
    return None
