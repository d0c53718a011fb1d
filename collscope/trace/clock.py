"""Clock alignment across ranks (pure): each rank's clock offset, estimated from the traces.

torch.profiler stamps each rank's events with its own host's clock. Ranks on one host share
that clock; hosts without PTP are commonly 1 ms to seconds apart (NTP gives milliseconds), and
Kineto's ``baseTimeNanoseconds`` is taken per host too: more than the lateness being measured.

The estimate: a collective that synchronises its group ends at (nearly) the same instant on
every rank, since no rank can finish it before the last rank's data arrived. So for each
synchronising call, ``end_r - end_q`` between two of its ranks is their clock difference plus
a small completion jitter (plus, on long traces, the hosts' drift: NTP-disciplined clocks run
tens of ppm apart). :mod:`offsets` fits each rank's offset against the reference rank (the
lowest rank traced): directly from the calls matched on every rank when there are at least
MIN_CALLS (the median of ``end_r - end_ref``, robust to a few calls whose end was delayed: a
descheduled gloo worker, a kernel queued behind another, with its distribution-free CI),
else chained through the sub-groups (a weighted least-squares solve over the pairs of ranks
that share calls); a drift term only where it is established (``offsets.DRIFT_RULE``). The
spread is the median |residual| of the rank's end differences under the model applied (direct,
without drift: the MAD about its offset): how well the ends agree after alignment. A large
spread means the ends do not coincide (calls that were not the same call, or a clock that
wanders more than a line describes).

Which calls: all_reduce, all_gather, reduce_scatter, alltoall and barrier. Left out: send/recv
(only the pair synchronises, and the sender may finish on handing its data over), broadcast and
reduce (a root-rooted pipeline: a broadcast root, or a non-root rank of a reduce, finishes as
soon as its data has left, before the far ranks have it), scatter/gather (rooted likewise),
and calls whose collective is unknown. Ranks that no chain of shared calls links to the
reference are not estimable; the output names them and the alignment is not applied.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from collscope.trace.offsets import DRIFT_RULE, MIN_CALLS, RankOffset, estimate

# Collectives whose end synchronises every rank of the group (see the module docstring).
SYNCHRONISING = frozenset({"all_reduce", "all_gather", "reduce_scatter", "alltoall", "barrier"})
MODES = ("auto", "on", "off")
# auto, when the traces do not name their hosts: the offsets are real clock offsets when some
# rank's offset is at least CLEAR_MARGIN x its spread and at least CLEAR_MIN_US. On one clock
# the ends of a synchronising collective scatter around one instant (4 gloo ranks on a loaded
# 2-core machine: medians 11-1332 us against MADs of 0.8-1.4 ms, below 1 x their MAD; GPU
# kernel ends are expected far closer); hosts without PTP are 1 ms or more apart.
CLEAR_MARGIN = 10.0
CLEAR_MIN_US = 100.0
# Lateness after alignment is decidable when the skew judged (per step, the delay of its
# most-delayed call: what picks the step's late rank) is more than DECIDABLE_MARGIN x the
# residual spread: the aligned start of a rank is uncertain by about its spread (MAD ~ 0.67
# sigma of a normal jitter, so 3 MAD ~ 2 sigma).
DECIDABLE_MARGIN = 3.0

METHOD = ("per rank, the median over the collectives matched on every rank that synchronise "
          "their group (all_reduce, all_gather, reduce_scatter, alltoall, barrier) of its end "
          "minus the reference rank's end (less its drift where applied); spread = MAD of the "
          "residual ends after alignment; " + DRIFT_RULE)
METHOD_CHAINED = (
    f"fewer than {MIN_CALLS} synchronising collectives span every rank: chained through "
    "sub-groups: per pair of ranks sharing >= 3 synchronising calls the median of their end "
    "difference (less drift where applied), the offsets against the reference solved by "
    "weighted least squares over the graph of pairs (weight 1 / var of each median, var ~ "
    "pi/2 (1.4826 MAD)^2 / n), normal 95% CI from the solve; spread = median |residual| of "
    "the rank's pair differences; " + DRIFT_RULE)


@dataclass
class ClockAlignment:
    mode: str                     # the --clock-align asked for: auto, on, off
    applied: bool
    reason: str                   # why it was applied or not
    reference: int | None
    offsets: list[RankOffset] = field(default_factory=list)   # empty: not estimable
    method: str = METHOD
    decidable: bool = True        # lateness on the (aligned) clocks can be trusted
    decision: str = ""            # why not, when not
    chained: bool = False         # offsets chained through sub-groups (offsets.estimate)
    not_estimable: list[int] = field(default_factory=list)   # no chain links them

    @property
    def residual_spread_us(self) -> float | None:
        """The worst rank's spread: how far apart the aligned ends of one call may lie."""
        return max((o.spread_us for o in self.offsets), default=None)

    def shift_us(self, rank: int, at_us: float) -> float:
        """What to subtract from the rank's time ``at_us`` (its own clock) to put it on the
        reference's clock: its offset, plus its drift since t0 where applied."""
        if not self.applied:
            return 0.0
        found = next((o for o in self.offsets if o.rank == rank), None)
        return found.shift_us(at_us) if found is not None else 0.0

    def aligned_us(self, rank: int, at_us: float) -> float:
        """The rank's time ``at_us`` on the reference's clock (unchanged when not applied)."""
        return at_us - self.shift_us(rank, at_us)

    def to_dict(self) -> dict[str, object]:
        return {"mode": self.mode, "applied": self.applied, "reason": self.reason,
                "reference_rank": self.reference, "method": self.method,
                "residual_spread_us": self.residual_spread_us,
                "lateness_decidable": self.decidable, "lateness_decision": self.decision,
                "chained_through_subgroups": self.chained,
                "not_estimable_ranks": self.not_estimable,
                "drift_origin_us": self.offsets[0].origin_us if self.offsets else None,
                "drifts": [{"rank": o.rank, "drift_ppm": o.drift_ppm,
                            "drift_ci_ppm": o.drift_ci_ppm, "decision": o.drift_decision}
                           for o in self.offsets if o.drift_applied]}


def decide(mode: str, hosts: list[str | None], offsets: list[RankOffset],
           not_estimable: list[int] | None = None) -> tuple[bool, str]:
    """(apply the offsets?, why): ``on``/``off`` force it; ``auto`` aligns traces of several
    hosts, keeps one named host's shared clock, and aligns traces that name no host when the
    offsets clearly exceed the spread (CLEAR_MARGIN, CLEAR_MIN_US). Not applied when some
    rank's offset is not estimable (aligned and unaligned clocks do not compare)."""
    if not offsets:
        return False, (f"offsets not estimable: fewer than {MIN_CALLS} synchronising "
                       "collectives matched on every rank, and no chain of sub-group calls "
                       f"(>= {MIN_CALLS} shared per pair of ranks) links the ranks; times "
                       "compared on the traces' own clocks")
    if not_estimable:
        missing = ", ".join(str(r) for r in not_estimable)
        return False, (f"offsets not estimable for rank(s) {missing}: no chain of synchronising "
                       f"calls (>= {MIN_CALLS} shared per pair of ranks) links them to rank "
                       f"{offsets[0].rank}; times compared on the traces' own clocks")
    clear = [o for o in offsets if abs(o.offset_us) >= max(CLEAR_MARGIN * o.spread_us,
                                                            CLEAR_MIN_US)]
    clear_text = ", ".join(f"rank {o.rank} {o.offset_us:+.1f} us" for o in clear)
    if mode == "on":
        return True, "--clock-align on"
    if mode == "off":
        named = sorted({h for h in hosts if h})
        return False, ("--clock-align off" + (
            f"; the traces come from {len(named)} hosts: lateness on unaligned clocks is "
            "only right if their clocks agree" if len(named) > 1 else ""))
    named = sorted({h for h in hosts if h})
    if len(named) > 1:
        return True, f"auto: the traces come from {len(named)} hosts ({', '.join(named)})"
    if named and all(hosts):
        return False, (f"auto: every trace is from host {named[0]}: one clock" + (
            f" (yet the ends disagree systematically: {clear_text}; check the matching, or "
            "--clock-align on)" if clear else ""))
    if clear:
        return True, (f"auto: the traces name no host and offsets clearly exceed their "
                      f"spread ({clear_text}; >= {CLEAR_MARGIN:g} x MAD and >= "
                      f"{CLEAR_MIN_US:g} us)")
    return False, (f"auto: the traces name no host and no offset is >= {CLEAR_MARGIN:g} x "
                   f"its spread and >= {CLEAR_MIN_US:g} us: taken as one clock")


def align(mode: str, hosts: list[str | None], ends: list[dict[int, float]],
          ranks: list[int]) -> ClockAlignment:
    """``ends``: per synchronising call matched on two or more ranks, rank -> its end on its
    own clock (calls of sub-groups too: they chain when too few calls span every rank)."""
    found = estimate(ends, ranks)
    applied, reason = decide(mode, hosts, found.offsets, found.unreachable)
    if mode == "on" and not applied:
        reason = "--clock-align on, but " + reason
    return ClockAlignment(mode, applied, reason, ranks[0] if ranks else None, found.offsets,
                          METHOD_CHAINED if found.chained else METHOD, chained=found.chained,
                          not_estimable=found.unreachable)


def judge(clock: ClockAlignment, skews_us: list[float], judged: str) -> None:
    """Marks lateness undecidable when the alignment was applied and the skew judged (the
    median of ``skews_us``, which ``judged`` describes) is within DECIDABLE_MARGIN x the
    residual spread. Unaligned clocks are one clock (or the user's --clock-align off)."""
    spread = clock.residual_spread_us
    if not clock.applied or spread is None or not skews_us:
        return
    skew = statistics.median(skews_us)
    worst = max(clock.offsets, key=lambda o: o.spread_us)
    if spread > 0 and skew <= DECIDABLE_MARGIN * spread:
        clock.decidable = False
        clock.decision = (
            f"lateness is not decidable on these traces: the skew judged ({judged}, "
            f"{skew:.1f} us) is within {DECIDABLE_MARGIN:g} "
            f"x the clock alignment's residual spread ({spread:.1f} us, MAD of rank "
            f"{worst.rank}'s aligned ends): in the median step no rank is late by more than "
            "the aligned clocks can tell; no straggler is named")
