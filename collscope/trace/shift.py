"""Which call is which across ranks when the traces carry no sequence number (pure).

Each rank's calls are split into streams of one (collective, process group, size), in the
order they ran. NCCL requires every rank of a communicator to issue its collectives in the
same order, so a stream is the same sequence of calls on every rank, except where a trace
window starts or ends at a different call (profiler windows, warm-up steps, a call cut off at
the edge): then the reference rank's call i is the rank's call i - k, a *shift* k of the rank's
stream (k = +1: the rank's first call is the reference's second; its trace starts one call
later). Pairing "the k-th call on each rank" assumes k = 0.

Evidence, per stream and shift |k| <= SHIFT_BOUND:

- ProfilerStep numbers (the same loop counted on every rank): a shift that pairs calls of
  different steps more often than of the same step is left out, where some shift is not
  (unless it fits the ends clearly better than the one taken: then the step numbers do not
  count the same loop and the stream is refused).
- The ends: a collective that synchronises its group ends at (nearly) the same instant on
  every rank, up to one constant clock offset per rank (:mod:`clock`). At a candidate offset a
  shift scores the low median of ``|end_rank - end_ref - offset|`` over its pairs (the MAD of
  the end differences about the rank's offset, taken low so that two pairs are judged by the
  better: at least half the pairs agree to within the score). Each stream takes its best
  shift; the offset is the candidate (0, and the median difference at each shift of the
  CANDIDATE_STREAMS largest streams: the true offset is any stream's median at its true
  shift) whose chosen pairs agree best, then re-centred on their median. Traces naming one
  host share its clock: the offset is 0, not searched.

A stream's shift is accepted when clearly better: the stream's next best shift at that offset
scores >= CLEAR_MARGIN x its score + CLEAR_MIN_US, and no other offset with other shifts brings
as many pairs within that margin (when calls repeat exactly, a clock offset of one period and
a shift of one call fit alike: refused, unless ProfilerSteps or one host's clock decide it).
Pairs at the accepted shifts whose difference is off the rank's offset by more than
REJECT_MARGIN x their MAD (and CLEAR_MIN_US) are not one call (a sampled trace drops calls
inside it, which no shift mends); they stay unmatched and are counted.

SHIFT_BOUND: windows that start more than 8 calls of one stream apart (more than a step's
worth for most streams) should be cut to the same ProfilerSteps with ``--steps``. Collectives
whose end does not synchronise the group (broadcast, reduce, send/recv, unknown) cannot be
judged by their ends and are paired by order (k = 0), said so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from collscope.trace.calls import CommCall
from collscope.trace.clock import CLEAR_MIN_US, SYNCHRONISING

SHIFT_BOUND = 8
CLEAR_MARGIN = 10.0           # the next best shift's score >= this x the chosen one's ...
                              # ... + CLEAR_MIN_US (GPU ends agree to tens of us, gloo ~1 ms)
REJECT_MARGIN = 10.0          # a pair off the rank's offset by more than this x MAD: not one call
CANDIDATE_STREAMS = 4         # the offsets tried come from this many streams' shifts

StreamKey = tuple[str, str, int | None]

SHIFT_TEST = (f"calls without Seq: per (collective, group, size) stream the shift |k| <= "
              f"{SHIFT_BOUND} (none pairing mostly different ProfilerSteps) whose end differences "
              "lie closest to the rank's clock offset (score: low median of |end - end_ref - "
              f"offset|); clear when the next best shift scores >= {CLEAR_MARGIN:g} x it + "
              f"{CLEAR_MIN_US:g} us and no other offset with other shifts brings as many pairs "
              f"within that; pairs > {REJECT_MARGIN:g} x MAD off the offset are not one call")


def stream_key(call: CommCall) -> StreamKey:
    """The stream a call belongs to. An alltoall's size is no identity: with uneven splits
    each rank sends and receives a different number of elements (the sampled-128 traces)."""
    return (call.collective, call.group,
            None if call.collective == "alltoall" else call.size_bytes)


def stream_label(stream: StreamKey) -> str:
    collective, group, size = stream
    return (f"{collective} (group {group or '-'}, "
            f"{'size ?' if size is None else f'{size} B'})")


@dataclass
class StreamShift:
    stream: StreamKey
    shift: int                        # the reference's call i is the rank's call i - shift
    pairs: int                        # calls paired at that shift (inside both windows)
    judged: bool                      # by its ends (synchronising); else by order, shift 0
    score_us: float | None = None     # low median of |end diff - the rank's offset|
    runner_up: int | None = None      # the next best shift and its score
    runner_up_us: float | None = None
    clear: bool = True
    by_steps: bool = False            # shifts pairing calls of different ProfilerSteps left out
    rival_offset_us: float | None = None   # the runner-up is another offset's (its pooled score)
    steps_disagree: bool = False      # the runner-up pairs other ProfilerSteps and fits better

    def describe(self) -> str:
        if not self.judged:
            return f"{stream_label(self.stream)}: by order (its end does not synchronise)"
        head = f"{stream_label(self.stream)}: shift {self.shift:+d}, {self.pairs} pair(s)"
        if self.runner_up is None:
            only = ("pairing calls of the same ProfilerSteps" if self.by_steps else
                    "with calls on both ranks")
            return f"{head}, ends off the offset by {self.score_us:.0f} us (the only shift " \
                   f"|k| <= {SHIFT_BOUND} {only})"
        verdict = "clear" if self.clear else "NOT clear"
        where = ("" if self.rival_offset_us is None else
                 f" with the offset at {self.rival_offset_us:+.0f} us")
        if self.steps_disagree:
            where = ", which pairs other ProfilerSteps (their numbers disagree with the ends)"
        return (f"{head}, ends off the offset by {self.score_us:.0f} us vs "
                f"{self.runner_up_us:.0f} us at shift {self.runner_up:+d}{where} ({verdict})")


@dataclass
class RankShifts:
    rank: int
    reference: int
    offset_us: float | None           # median end difference of the accepted pairs
    spread_us: float | None           # their MAD
    streams: list[StreamShift]
    rejected: int = 0                 # pairs at the chosen shifts whose ends disagree
    pairs: dict[StreamKey, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def unclear(self) -> list[StreamShift]:
        return [s for s in self.streams if s.judged and not s.clear]

    def describe(self) -> str:
        judged = [s for s in self.streams if s.judged]
        shifted = [s for s in self.streams if s.shift != 0 or not s.clear]
        at_zero = len(judged) - len([s for s in shifted if s.judged])
        parts = [s.describe() for s in shifted]
        if at_zero:
            parts.append(f"{at_zero} stream(s) at shift 0, clearly")
        order = len(self.streams) - len(judged)
        if order:
            parts.append(f"{order} stream(s) by order (their end does not synchronise)")
        if self.rejected:
            parts.append(f"{self.rejected} pair(s) at those shifts left unmatched: their ends "
                         f"are more than {REJECT_MARGIN:g} x the MAD ({self.spread_us:.0f} us) "
                         "off the rank's offset, not one call")
        offset = ("" if self.offset_us is None else
                  f" (ends {self.offset_us:+.0f} us from rank {self.reference}'s, MAD "
                  f"{self.spread_us:.0f} us)")
        return f"rank {self.rank} vs rank {self.reference}{offset}: " + "; ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {"rank": self.rank, "reference_rank": self.reference,
                "end_offset_us": self.offset_us, "end_spread_us": self.spread_us,
                "rejected_pairs": self.rejected,
                "streams": [{"collective": s.stream[0], "group": s.stream[1],
                             "size_bytes": s.stream[2], "shift": s.shift, "pairs": s.pairs,
                             "judged_by_ends": s.judged, "score_us": s.score_us,
                             "runner_up_shift": s.runner_up,
                             "runner_up_score_us": s.runner_up_us, "clear": s.clear}
                            for s in self.streams]}


def _pairs(n_ref: int, n_rank: int, shift: int) -> list[tuple[int, int]]:
    """(reference index, rank index) of the calls paired at ``shift``."""
    return [(i, i - shift) for i in range(max(0, shift), min(n_ref, n_rank + shift))]


def _score(diffs: list[float], offset: float) -> float:
    """The low median of |difference - offset| (``statistics.median_low``, in numpy: pooled
    over a rank's streams this runs over thousands of pairs per offset tried)."""
    import numpy as np

    residuals = np.abs(np.asarray(diffs, dtype=float) - offset)
    low = (len(diffs) - 1) // 2
    return float(np.partition(residuals, low)[low])


def _end(call: CommCall) -> float:
    return call.start_us + call.dur_us


Choice = dict[StreamKey, list[tuple[float, int, int]]]   # per stream: (score, -pairs, shift)


def _rank_shifts(scored: list[tuple[float, int, int]]) -> list[tuple[float, int, int]]:
    """Best first: lower score, then more pairs, then the smaller |shift|."""
    return sorted(scored, key=lambda item: (item[0], item[1], abs(item[2]), item[2]))


def _choose(diffs: dict[StreamKey, dict[int, list[float]]], offset: float) -> Choice:
    """Per stream, its shifts ranked by their score at ``offset``."""
    return {s: _rank_shifts([(_score(d, offset), -len(d), k) for k, d in by_shift.items()])
            for s, by_shift in diffs.items()}


def _choose_many(diffs: dict[StreamKey, dict[int, list[float]]], offsets: list[float],
                 ) -> list[Choice]:
    """:func:`_choose` at each of ``offsets``, the scores computed for all of them at once."""
    import numpy as np

    thetas = np.asarray(offsets, dtype=float)[:, None]
    scores: dict[StreamKey, dict[int, list[float]]] = {}
    for s, by_shift in diffs.items():
        scores[s] = {}
        for k, d in by_shift.items():
            residuals = np.abs(np.asarray(d, dtype=float)[None, :] - thetas)
            low = (len(d) - 1) // 2                      # statistics.median_low's index
            scores[s][k] = np.partition(residuals, low, axis=1)[:, low].tolist()
    return [{s: _rank_shifts([(by_shift[k][t], -len(diffs[s][k]), k) for k in by_shift])
             for s, by_shift in scores.items()} for t in range(len(offsets))]


def _chosen_diffs(diffs: dict[StreamKey, dict[int, list[float]]], choice: Choice,
                  ) -> list[float]:
    return [d for s, ranked in choice.items() for d in diffs[s][ranked[0][2]]]


def _steps_agree(reference: list[CommCall], rank: list[CommCall], shift: int) -> bool:
    """Whether a shift pairs calls of the same ProfilerStep at least as often as not (the
    step numbers count the same loop on every rank; unknown steps say nothing)."""
    agree = conflict = 0
    for i, j in _pairs(len(reference), len(rank), shift):
        a, b = reference[i].step, rank[j].step
        if a is not None and b is not None:
            agree, conflict = agree + (a == b), conflict + (a != b)
    return conflict <= agree


def _end_diffs(reference: list[CommCall], rank: list[CommCall],
               ) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """Per shift |k| <= SHIFT_BOUND with calls paired, the end differences of the pairs: (the
    shifts searched, those left out for pairing calls of different ProfilerSteps where some
    shift does not)."""
    ref_ends, ends = [_end(c) for c in reference], [_end(c) for c in rank]
    by_shift = {k: [ends[j] - ref_ends[i] for i, j in _pairs(len(ref_ends), len(ends), k)]
                for k in range(-SHIFT_BOUND, SHIFT_BOUND + 1)}
    by_shift = {k: d for k, d in by_shift.items() if d}
    same_step = {k: d for k, d in by_shift.items() if _steps_agree(reference, rank, k)}
    if not same_step:
        return by_shift, {}
    return same_step, {k: d for k, d in by_shift.items() if k not in same_step}


Fit = tuple[float, int, int, float]       # (score, -pairs, sum of |shift|, |offset|)


def _fit(diffs: dict[StreamKey, dict[int, list[float]]], theta: float, ranked: Choice,
         ) -> Fit:
    chosen = _chosen_diffs(diffs, ranked)
    return (_score(chosen, theta), -len(chosen), sum(abs(r[0][2]) for r in ranked.values()),
            abs(theta))


def _within(diffs: list[float], offset: float, tolerance: float) -> int:
    return sum(1 for d in diffs if abs(d - offset) <= tolerance)


def _assignment(choice: Choice) -> dict[StreamKey, int]:
    return {s: ranked[0][2] for s, ranked in choice.items()}


def _candidate_offsets(diffs: dict[StreamKey, dict[int, list[float]]]) -> list[float]:
    """0 and the median end difference at each shift of the CANDIDATE_STREAMS streams with
    the most calls: the true offset is the median of any stream at its true shift."""
    largest = sorted(diffs, key=lambda s: -max(len(d) for d in diffs[s].values()))
    return sorted({0.0, *(statistics.median(d) for s in largest[:CANDIDATE_STREAMS]
                          for d in diffs[s].values())})


def find_shifts(reference: dict[StreamKey, list[CommCall]], rank: dict[StreamKey, list[CommCall]],
                rank_id: int, reference_id: int, one_clock: bool = False) -> RankShifts:
    """The rank's shift per stream it shares with the reference (each stream's calls in the
    order they ran), and the pairs accepted. ``one_clock``: the traces share a clock (one
    named host), so the offset is 0 and not searched."""
    shared = [s for s in reference if s in rank]
    found = {s: _end_diffs(reference[s], rank[s]) for s in shared if s[0] in SYNCHRONISING}
    diffs = {s: d for s, (d, _) in found.items() if d}
    offset: float | None = None
    choice: Choice = {}
    rival: tuple[Fit, Choice, float] | None = None
    if diffs:
        candidates = [0.0] if one_clock else _candidate_offsets(diffs)
        fits = [(_fit(diffs, theta, ranked), ranked, theta) for theta, ranked in
                 zip(candidates, _choose_many(diffs, candidates))]
        # The offset whose shifts bring the most pairs within the clear margin of the closest
        # fit's score, then the closest: a shift pairing few calls can fit a free offset
        # closely by chance, many agreeing pairs do not happen by chance.
        margin = CLEAR_MARGIN * min(fit[0] for fit, _, _ in fits) + CLEAR_MIN_US
        fits.sort(key=lambda item: (-_within(_chosen_diffs(diffs, item[1]), item[2], margin),
                                    item[0]))
        (best, choice, offset) = fits[0]
        for _ in range(3 if not one_clock else 0):   # re-centre on the chosen pairs
            centre = statistics.median(_chosen_diffs(diffs, choice))
            if centre == offset:
                break
            offset, choice = centre, _choose(diffs, centre)
        best = _fit(diffs, offset, choice)
        # Other shifts at another offset (a clock offset of one call period and a shift of
        # one call can fit alike): a rival when it brings as many pairs within the clear
        # margin of its offset as the best does of its own.
        tolerance = CLEAR_MARGIN * best[0] + CLEAR_MIN_US
        agreeing = _within(_chosen_diffs(diffs, choice), offset, tolerance)
        rival = next(((fit, other, theta) for fit, other, theta in fits[1:]
                      if _assignment(other) != _assignment(choice)
                      and _within(_chosen_diffs(diffs, other), theta, tolerance) >= agreeing),
                     None)
    streams: list[StreamShift] = []
    pairs: dict[StreamKey, list[tuple[int, int]]] = {}
    for s in shared:
        if s not in choice:      # not judged by its ends: by order
            pairs[s] = _pairs(len(reference[s]), len(rank[s]), 0)
            streams.append(StreamShift(s, 0, len(pairs[s]), judged=False))
            continue
        (score, count, k), *others = choice[s]
        excluded = found[s][1]
        shift = StreamShift(s, k, -count, True, score, by_steps=bool(excluded))
        if others:
            shift.runner_up_us, _, shift.runner_up = others[0]
            shift.clear = shift.runner_up_us >= CLEAR_MARGIN * score + CLEAR_MIN_US
        at = offset if offset is not None else 0.0      # set whenever a stream is judged
        against = min(((_score(d, at), k) for k, d in excluded.items()), default=None)
        if against is not None and CLEAR_MARGIN * against[0] + CLEAR_MIN_US <= score:
            # A shift across ProfilerSteps fits the ends clearly better: the ranks' step
            # numbers do not count the same loop, and neither can be trusted.
            shift.runner_up_us, shift.runner_up = against
            shift.clear, shift.steps_disagree = False, True
        if rival is not None and _assignment(rival[1])[s] != k:
            # Another offset with other shifts fits about as well (all its pairs pooled).
            shift.runner_up, shift.runner_up_us = _assignment(rival[1])[s], rival[0][0]
            shift.rival_offset_us = rival[2]
            shift.clear = False
        streams.append(shift)
        if shift.clear:
            pairs[s] = _pairs(len(reference[s]), len(rank[s]), k)
    result = RankShifts(rank_id, reference_id, None, None, streams, 0, pairs)
    _reject_disagreeing(result, reference, rank)
    return result


def _reject_disagreeing(result: RankShifts, reference: dict[StreamKey, list[CommCall]],
                        rank: dict[StreamKey, list[CommCall]]) -> None:
    """Drops the accepted pairs whose end difference is far off the rank's offset (the median
    over all accepted synchronising pairs), and records that offset and the pairs' MAD."""
    judged = {s.stream for s in result.streams if s.judged}
    measured = [(s, i, j, _end(rank[s][j]) - _end(reference[s][i]))
                for s, pairs in result.pairs.items() if s in judged for i, j in pairs]
    if not measured:
        return
    offset = statistics.median(d for *_, d in measured)
    spread = statistics.median(abs(d - offset) for *_, d in measured)
    limit = max(REJECT_MARGIN * spread, CLEAR_MIN_US)
    for s, i, j, d in measured:
        if abs(d - offset) > limit:
            result.pairs[s].remove((i, j))
            result.rejected += 1
    result.offset_us, result.spread_us = offset, spread
