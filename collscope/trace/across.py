"""Across ranks (pure): the same collective call on every rank, its skew, the late rank.

A call is matched across ranks by (process group, sequence number) in the groups whose every
call on every rank records "Seq" (exact). Elsewhere by its position among the rank's calls of
the same collective, group and size, at the rank's *shift* against the reference rank (its
window may start at a different call): the shift that makes the ends of synchronising calls
agree, chosen per stream and only when clearly better than the others (:mod:`shift`); calls
outside the windows' overlap, of unclear streams, or whose ends still disagree stay unmatched
and counted, and an unclear stream withholds the straggler verdict.

The late rank of a call is the one that was ready for it last (its kernel started last; on
gloo, it issued the c10d op last): the others sat in the collective waiting for it. Ranks on
different hosts have different clocks: each rank's offset (and drift, where established) is
estimated from the ends of the matched synchronising collectives (:mod:`collscope.trace.clock`;
calls of sub-groups too, chained when too few span every rank, streams without Seq of a group
without the reference matched against the group's lowest rank) and, when applied (``auto``:
several hosts, or offsets clearly above their spread), subtracted before the ready times are
compared. When the aligned ends still disagree by more than the skew judged, lateness is not
decidable and no straggler is named.

The straggler test takes steps as its trials, not calls: one slow step (a data-loader hiccup,
a checkpoint) makes a rank late for every collective of that step, so its calls are not
independent, and counting them as trials would call one bad step a straggler. Per step, the
late rank is the one that held up its most-delayed call (the largest ``delay_us``); a rank is a
straggler when it is that in more steps than 1/N of them (one-sided binomial test, Bonferroni
over the N ranks). Calls stay the descriptive count.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from collscope.trace.calls import CommCall
from collscope.trace.clock import SYNCHRONISING, ClockAlignment, align, judge
from collscope.trace.rank import RankTrace
from collscope.trace.shift import (
    CLEAR_MARGIN,
    CLEAR_MIN_US,
    SHIFT_TEST,
    RankShifts,
    StreamKey,
    find_shifts,
    stream_key,
)
from collscope.trace.table import rank_window_calls

# A rank is a straggler when the binomial test rejects "last as often as any other rank"
# at this level.
STRAGGLER_ALPHA = 0.01
# Lateness that matters: a call's last-ready rank is late only when it was ready more than the
# margin after the next latest rank. The margin is how uncertain the compared times are, from
# the traces: on aligned clocks the alignment's residual spread (the worst rank's MAD of the
# aligned ends of synchronising collectives, which finish together: :mod:`clock`), on one
# clock the profiler's time unit, LATE_FLOOR_US (at least that on aligned clocks too). So a
# tie (identical ranks: every start equal) or a difference inside what the clocks can tell
# names no late rank, and every late call costs the others a wait.
LATE_FLOOR_US = 1.0


def late_margin_us(clock: ClockAlignment) -> float:
    spread = clock.residual_spread_us if clock.applied else None
    return max(spread or 0.0, LATE_FLOOR_US)


@dataclass
class MatchedCall:
    key: tuple[object, ...]
    collective: str
    size_bytes: int | None
    starts_us: dict[int, float]       # rank -> when that rank was ready (CommCall.ready_us)
    late_rank: int | None             # ready last by more than the margin; None: nobody late
    skew_us: float                    # latest ready - earliest ready
    wait_us: float                    # sum over the other ranks of (latest ready - theirs)
    delay_us: float                   # latest ready - the next latest: what the late rank cost
    step: int | None = None           # ProfilerStep of the call (on the first rank)
    ends_us: dict[int, float] = field(default_factory=dict)   # rank -> its end, own clock


@dataclass
class RankLateness:
    rank: int
    late_calls: int
    late_steps: int                   # steps whose most-delayed call waited on this rank
    wait_caused_ms: float             # the others' waits for it, summed over ranks
    delay_per_step_ms: float          # per step, the most it delayed one call (calls of a
                                      # step overlap, so their delays do not add up)


@dataclass
class Straggler:
    rank: int
    late_steps: int                   # the trials of the test
    steps: int
    late_calls: int                   # descriptive: its late calls of all matched calls
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
    straggler_test: str = ""          # what the straggler test found, when it names no rank
    clock: ClockAlignment | None = None
    shifts: list[RankShifts] = field(default_factory=list)   # per non-reference rank

    def matching_lines(self) -> list[str]:
        """How calls without Seq were paired, per rank (empty when every group has Seq)."""
        lines = [found.describe() for found in self.shifts if found.streams]
        return [SHIFT_TEST, *lines] if lines else []


def _seq_groups(ordered: dict[int, list[CommCall]]) -> set[str]:
    """Process groups whose every call on every rank records its sequence number: those are
    matched by (group, Seq), exactly."""
    groups: dict[str, bool] = {}
    for calls in ordered.values():
        for call in calls:
            groups[call.group] = groups.get(call.group, True) and call.seq is not None
    return {group for group, every in groups.items() if every}


def _order_key(stream: StreamKey, index: int) -> tuple[object, ...]:
    return ("order", *stream, index)


def _keyed(ordered: dict[int, list[CommCall]], one_clock: bool,
           ) -> tuple[dict[int, dict[tuple[object, ...], CommCall]], list[RankShifts]]:
    """Per rank, its calls under the key that names the same call on every rank: (group, Seq)
    where recorded, else (stream, the reference's index) at the rank's shift (:mod:`shift`)."""
    with_seq = _seq_groups(ordered)
    per_rank: dict[int, dict[tuple[object, ...], CommCall]] = {r: {} for r in ordered}
    streams: dict[int, dict[StreamKey, list[CommCall]]] = {r: defaultdict(list)
                                                           for r in ordered}
    for r, calls in ordered.items():
        for call in calls:
            if call.group in with_seq:
                per_rank[r][("seq", call.group, call.seq)] = call
            else:
                streams[r][stream_key(call)].append(call)
    rank_ids = sorted(ordered)
    shifts = []
    if rank_ids:
        reference = rank_ids[0]
        for stream, calls in streams[reference].items():
            for i, call in enumerate(calls):
                per_rank[reference][_order_key(stream, i)] = call
        for r in rank_ids[1:]:
            found = find_shifts(streams[reference], streams[r], r, reference, one_clock)
            shifts.append(found)
            for stream, pairs in found.pairs.items():
                for i, j in pairs:
                    per_rank[r][_order_key(stream, i)] = streams[r][stream][j]
        shifts += _subgroup_shifts(streams, per_rank, one_clock)
    return per_rank, shifts


def _subgroup_shifts(streams: dict[int, dict[StreamKey, list[CommCall]]],
                     per_rank: dict[int, dict[tuple[object, ...], CommCall]],
                     one_clock: bool) -> list[RankShifts]:
    """Streams the reference rank does not have (a sub-group without it), matched against
    the lowest rank that has them (the same shift search), so that their ends can chain the
    clock offsets through sub-groups (:mod:`clock`)."""
    rank_ids = sorted(streams)
    own: dict[int, dict[StreamKey, list[CommCall]]] = defaultdict(dict)
    for r in rank_ids[1:]:
        for stream, calls in streams[r].items():
            if all(stream not in streams[q] for q in rank_ids if q < r):
                own[r][stream] = calls
    shifts = []
    for local, local_streams in own.items():
        for stream, calls in local_streams.items():
            for i, call in enumerate(calls):
                per_rank[local][_order_key(stream, i)] = call
        for r in (q for q in rank_ids if q > local):
            theirs = {s: streams[r][s] for s in local_streams if s in streams[r]}
            if not theirs:
                continue
            found = find_shifts(local_streams, theirs, r, local, one_clock)
            shifts.append(found)
            for stream, pairs in found.pairs.items():
                for i, j in pairs:
                    per_rank[r][_order_key(stream, i)] = streams[r][stream][j]
    return shifts


def match(ranks: list[RankTrace], clock_align: str = "auto") -> Across:
    """Calls present on every rank, matched; the ranks' clock offsets (applied per
    ``clock_align``: auto, on, off); per-rank lateness; the straggler verdict. The calls are
    those of the ranks' window (:func:`rank_window_calls`), as the rank figures."""
    ordered = {t.rank: sorted(rank_window_calls(t), key=lambda c: c.ready_us) for t in ranks}
    hosts = {t.host for t in ranks}
    # One named host: one clock, so the shift search takes the offset as 0 (clock.decide).
    one_clock = clock_align != "on" and len(hosts) == 1 and None not in hosts
    per_rank, rank_shifts = _keyed(ordered, one_clock)
    rank_ids = sorted(per_rank)
    common = set.intersection(*(set(calls) for calls in per_rank.values())) if rank_ids else set()
    total = sum(len(calls) for calls in ordered.values())
    clock = align(clock_align, [t.host for t in sorted(ranks, key=lambda t: t.rank)],
                  synchronising_ends(per_rank), rank_ids)
    margin = late_margin_us(clock)
    matched = []
    for key in common:
        starts = {r: clock.aligned_us(r, per_rank[r][key].ready_us) for r in rank_ids}
        last = max(starts, key=lambda r: (starts[r], r))
        latest = starts[last]
        others = [s for r, s in starts.items() if r != last]
        first = per_rank[rank_ids[0]][key]
        late = last if latest - max(others) > margin else None
        matched.append(MatchedCall(key, first.collective, first.size_bytes, starts, late,
                                   latest - min(starts.values()),
                                   sum(latest - s for s in others), latest - max(others),
                                   first.step,
                                   {r: per_rank[r][key].start_us + per_rank[r][key].dur_us
                                    for r in rank_ids}))
    matched.sort(key=lambda m: min(m.starts_us.values()))
    steps = {m.step for m in matched}
    step_late = step_late_ranks(matched)
    lateness = []
    for r in rank_ids:
        worst: dict[int | None, float] = defaultdict(float)
        for m in matched:
            if m.late_rank == r:
                worst[m.step] = max(worst[m.step], m.delay_us)
        lateness.append(RankLateness(
            r, sum(1 for m in matched if m.late_rank == r),
            sum(1 for late in step_late.values() if late == r),
            sum(m.wait_us for m in matched if m.late_rank == r) / 1e3,
            sum(worst.values()) / 1e3 / max(1, len(steps))))
    judged_steps = len(_worst_per_step(matched))
    straggler, finding = _straggler(lateness, judged_steps, len(matched), margin)
    if judged_steps:
        judge(clock, list(step_delays(matched).values()),
              "median over steps of the delay of the step's most-delayed call")
    else:
        judge(clock, [m.delay_us for m in matched], "median over calls of the late rank's delay")
    if not clock.decidable:
        straggler, finding = None, clock.decision
    # Streams matched against another rank than the reference (sub-groups without it) only
    # feed the clock offsets, never the calls judged here: they do not withhold the verdict.
    unclear = [(found, stream) for found in rank_shifts if found.reference == rank_ids[0]
               for stream in found.unclear]
    if unclear:
        found, stream = unclear[0]
        straggler, finding = None, (
            f"no straggler verdict: which call is which is not clear on {len(unclear)} "
            f"stream(s) of calls without Seq (e.g. rank {found.rank}'s "
            f"{stream.describe()}; clear needs the next best >= {CLEAR_MARGIN:g} x + "
            f"{CLEAR_MIN_US:g} us); their calls are left unmatched")
    clocks = ("the ranks' clocks aligned to rank "
              f"{clock.reference}'s (offsets from the ends of synchronising collectives)"
              if clock.applied else "the traces' own clocks")
    return Across(matched, lateness, straggler, total - len(matched) * len(rank_ids),
                  "calls of the window matched by (process group, Seq) where every rank records "
                  "it, else per (collective, group, size) stream at each rank's shift against "
                  f"rank {rank_ids[0] if rank_ids else '-'}'s that makes the ends of "
                  "synchronising calls agree (see the matching lines); late rank = the one "
                  f"ready last on {clocks} (kernel start; gloo: the issuing c10d op) by more "
                  f"than {margin:.3g} us after the next latest (the lateness margin: "
                  + ("the alignment's residual spread, " if clock.applied else "")
                  + f"at least {LATE_FLOOR_US:g} us; within it, no rank is late)",
                  finding, clock, rank_shifts)


def synchronising_ends(per_rank: dict[int, dict[tuple[object, ...], CommCall]],
                       ) -> list[dict[int, float]]:
    """Per call matched on two or more ranks whose collective synchronises its group, rank ->
    its end (own clock): the calls of every group, sub-groups too (clock.align chains them
    when too few span every rank)."""
    holders: dict[tuple[object, ...], dict[int, CommCall]] = defaultdict(dict)
    for r, calls in per_rank.items():
        for key, call in calls.items():
            holders[key][r] = call
    return [{r: c.start_us + c.dur_us for r, c in calls.items()}
            for calls in holders.values()
            if len(calls) >= 2 and all(c.collective in SYNCHRONISING for c in calls.values())]


def _worst_per_step(matched: list[MatchedCall]) -> dict[int, MatchedCall]:
    """Per ProfilerStep, its most-delayed call (calls outside steps: none)."""
    worst: dict[int, MatchedCall] = {}
    for m in matched:
        if m.step is not None and (m.step not in worst or m.delay_us > worst[m.step].delay_us):
            worst[m.step] = m
    return worst


def step_delays(matched: list[MatchedCall]) -> dict[int, float]:
    """Per ProfilerStep, the delay of its most-delayed call: the skew the straggler test
    judges (it picks the step's late rank)."""
    return {step: m.delay_us for step, m in _worst_per_step(matched).items()}


def step_late_ranks(matched: list[MatchedCall]) -> dict[int, int]:
    """Per ProfilerStep, the late rank of its most-delayed call (calls outside steps, and steps
    whose most-delayed call waited on nobody by more than the margin: none)."""
    return {step: m.late_rank for step, m in _worst_per_step(matched).items()
            if m.late_rank is not None}


def _straggler(lateness: list[RankLateness], steps: int, calls: int, margin_us: float,
               ) -> tuple[Straggler | None, str]:
    """(the straggler or None, what the test found when it names none). ``steps``: the steps
    with matched calls, the trials (a step in which no rank was late is a trial none won)."""
    n = len(lateness)
    if n < 2:
        return None, ""
    from collscope.stats.significance import late_rank_p, min_late_trials

    if steps == 0:
        return None, ("no straggler test: no matched call lies in a ProfilerStep (steps are "
                      "the trials; the calls of one step are not independent)")
    if steps < min_late_trials(n, STRAGGLER_ALPHA):
        return None, (f"no straggler test: {steps} step(s) with matched calls, too few for "
                      f"p < {STRAGGLER_ALPHA:g} even if one rank were late in all of them "
                      "(steps are the trials; trace more ProfilerSteps)")
    worst = max(lateness, key=lambda r: (r.late_steps, r.late_calls))
    if worst.late_steps == 0:
        return None, (f"no straggler: in none of the {steps} steps is a rank ready more than "
                      f"the lateness margin ({margin_us:.3g} us) after the next latest")
    # The most-late rank is picked after looking: Bonferroni over the n ranks.
    p_value = late_rank_p(worst.late_steps, steps, n)
    test = (f"one-sided binomial test of {worst.late_steps} late steps of {steps} against "
            f"1/{n}, Bonferroni-corrected for {n} ranks (per step the rank its most-delayed "
            "call waited on)")
    if p_value < STRAGGLER_ALPHA:
        return Straggler(worst.rank, worst.late_steps, steps, worst.late_calls, calls, n,
                         p_value, test), ""
    return None, (f"no straggler: rank {worst.rank} late in {worst.late_steps} of {steps} "
                  f"steps, p = {p_value:.2g} >= {STRAGGLER_ALPHA:g} ({test})")
