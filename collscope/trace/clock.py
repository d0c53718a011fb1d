"""Clock alignment across ranks (pure): each rank's clock offset, estimated from the traces.

torch.profiler stamps each rank's events with its own host's clock. Ranks on one host share
that clock; hosts without PTP are commonly 1 ms to seconds apart (NTP gives milliseconds), and
Kineto's ``baseTimeNanoseconds`` is taken per host too: more than the lateness being measured.

The estimate: a collective that synchronises its group ends at (nearly) the same instant on
every rank, since no rank can finish it before the last rank's data arrived. So for each call
matched on every rank, ``end_r - end_ref`` is rank r's clock offset against the reference rank
(the lowest rank traced) plus a small completion jitter. A rank's offset is the median of that
difference over the matched synchronising calls (robust to a few calls whose end was delayed:
a descheduled gloo worker, a kernel queued behind another), with its distribution-free 95% CI
(``bench.stats.median_ci``); its spread is the MAD of the residuals ``end_r - end_ref -
offset_r``: how well the ends agree after alignment. A large spread means the ends do not
coincide (clock drift during the trace, or calls that were not the same call).

Which calls: all_reduce, all_gather, reduce_scatter, alltoall and barrier. Left out: send/recv
(only the pair synchronises, and the sender may finish on handing its data over), broadcast and
reduce (a root-rooted pipeline: a broadcast root, or a non-root rank of a reduce, finishes as
soon as its data has left, before the far ranks have it), scatter/gather (rooted likewise),
and calls whose collective is unknown. Groups: only calls matched on *every* traced rank are
used (``across.match`` matches only those), so each used call's group holds the reference and
the rank: no chaining through sub-groups. A job whose sub-groups never span all traced ranks
(e.g. pure tensor-parallel pairs analysed together) gets no estimate; the output says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

# Collectives whose end synchronises every rank of the group (see the module docstring).
SYNCHRONISING = frozenset({"all_reduce", "all_gather", "reduce_scatter", "alltoall", "barrier"})
MODES = ("auto", "on", "off")
MIN_CALLS = 3                 # fewer matched synchronising calls: no estimate (a median and
                              # a MAD of 1-2 values say nothing about agreement)
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
          "minus the reference rank's end; spread = MAD of the residual ends after alignment")


@dataclass
class RankOffset:
    rank: int
    offset_us: float              # this rank's clock minus the reference rank's clock
    ci_low_us: float              # distribution-free CI of the median (bench.stats.median_ci)
    ci_high_us: float
    ci_confidence: float
    spread_us: float              # MAD of end_r - end_ref - offset_us over the calls
    calls: int


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

    @property
    def residual_spread_us(self) -> float | None:
        """The worst rank's spread: how far apart the aligned ends of one call may lie."""
        return max((o.spread_us for o in self.offsets), default=None)

    def shift_us(self, rank: int) -> float:
        """What to subtract from the rank's times to put them on the reference's clock."""
        if not self.applied:
            return 0.0
        return next((o.offset_us for o in self.offsets if o.rank == rank), 0.0)

    def to_dict(self) -> dict[str, object]:
        return {"mode": self.mode, "applied": self.applied, "reason": self.reason,
                "reference_rank": self.reference, "method": self.method,
                "residual_spread_us": self.residual_spread_us,
                "lateness_decidable": self.decidable, "lateness_decision": self.decision}


def estimate(ends: list[dict[int, float]], ranks: list[int]) -> list[RankOffset]:
    """Offsets of ``ranks`` against ``ranks[0]`` from the ends (rank -> end, microseconds on
    the rank's clock) of synchronising calls matched on every rank; [] with too few calls."""
    from collscope.bench.stats import median_ci

    if len(ends) < MIN_CALLS or not ranks:
        return []
    reference = ranks[0]
    offsets = []
    for r in ranks:
        diffs = [call[r] - call[reference] for call in ends]
        ci = median_ci(diffs)
        spread = statistics.median(abs(d - ci.median) for d in diffs)
        offsets.append(RankOffset(r, ci.median, ci.low, ci.high, ci.confidence, spread,
                                  len(diffs)))
    return offsets


def decide(mode: str, hosts: list[str | None], offsets: list[RankOffset]) -> tuple[bool, str]:
    """(apply the offsets?, why): ``on``/``off`` force it; ``auto`` aligns traces of several
    hosts, keeps one named host's shared clock, and aligns traces that name no host when the
    offsets clearly exceed the spread (CLEAR_MARGIN, CLEAR_MIN_US)."""
    if not offsets:
        return False, (f"offsets not estimable: fewer than {MIN_CALLS} synchronising "
                       "collectives matched on every rank; times compared on the traces' own "
                       "clocks")
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
    offsets = estimate(ends, ranks)
    applied, reason = decide(mode, hosts, offsets)
    if mode == "on" and not offsets:
        reason = "--clock-align on, but " + reason
    return ClockAlignment(mode, applied, reason, ranks[0] if ranks else None, offsets)


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
