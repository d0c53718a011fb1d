"""What to change (pure rules): trace facts -> findings with a fix, ranked by the step time at
stake (milliseconds per step).

Every rule is registered in the registry doctor's rules use (``collscope.rules``): ``@rule(id,
AREA, explanation)`` on a function ``TraceFacts -> Iterable[Verdict]``; ``findings`` runs them
in the order registered and stamps each verdict with its rule's id. How to add one: write the
function below the others, decorate it, and list its id in docs/trace.md (a test checks).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, NamedTuple

from collscope.records.finding import FindingRecord
from collscope.records.trace import TraceCollectiveRecord
from collscope.rules import Registry
from collscope.trace import intervals as iv
from collscope.trace.across import Across
from collscope.trace.calls import CommCall
from collscope.trace.rank import RankTrace

SMALL_ALL_REDUCE_BYTES = 1 << 20      # below ~1 MiB an all-reduce is latency-bound on fabrics
LATENCY_BOUND_US = 50.0               # size unknown (old traces): a p50 kernel this short is
                                      # latency-bound too
MANY_PER_STEP = 8
EXPOSED_OVERLAP_PERCENT = 50.0        # mostly exposed: less than half hidden by compute
EXPOSED_SHARE_PERCENT = 10.0          # ... and at least this share of the step waits on it
FAR_BELOW_EFFICIENCY = 0.5


def _steps(trace: RankTrace | None) -> int:
    return max(1, len(trace.steps)) if trace is not None else 1


def _rank(rank: int) -> int | None:
    return None if rank < 0 else rank


def _small_all_reduces(traces: list[RankTrace], rows: list[TraceCollectiveRecord],
                       ) -> dict[int, tuple[float, float, dict[int, float]]]:
    """Per row rank (-1: pooled), the latency-bound all-reduces: (calls per step, exposed ms
    per step, exposed ms over the window per traced rank).

    A row under 1 MiB counts all its calls (one size); a row of unknown size counts those
    whose own kernel is under LATENCY_BOUND_US (a row with p50 8 us may hold 450 us calls that
    are not latency-bound). Their time counts where no compute runs: what they cost the step.
    """
    from collscope.trace.table import window_calls

    by_rank = {t.rank: t for t in traces}
    picked: dict[int, dict[int, list[CommCall]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.collective != "all_reduce" or not r.calls_per_step:
            continue
        if r.size_bytes is not None and r.size_bytes >= SMALL_ALL_REDUCE_BYTES:
            continue
        if r.size_bytes is None and r.kernel_us_p50 >= LATENCY_BOUND_US:
            continue
        owners = traces if r.rank < 0 else [by_rank[r.rank]] if r.rank in by_rank else []
        key = (r.collective, r.dtype, r.size_bytes, r.group)
        for trace in owners:
            picked[r.rank][trace.rank].extend(
                c for c in window_calls(trace)
                if (c.collective, c.dtype, c.size_bytes, c.group) == key
                and (r.size_bytes is not None or c.dur_us < LATENCY_BOUND_US))
    result = {}
    for rank, per_trace in picked.items():
        steps = _steps(by_rank.get(rank)) if rank >= 0 else sum(map(_steps, traces))
        exposed = {t: _exposed_ms(by_rank[t], calls) for t, calls in per_trace.items()}
        count = sum(len(calls) for calls in per_trace.values())
        result[rank] = (count / steps, sum(exposed.values()) / steps, exposed)
    return result


def _exposed_ms(trace: RankTrace, calls: list[CommCall]) -> float:
    """Milliseconds the calls run while no compute runs on the rank (interval unions)."""
    busy = iv.union((c.start_us, c.start_us + c.dur_us) for c in calls)
    return iv.total(iv.difference(busy, trace.compute_busy)) / 1e3


class Verdict(NamedTuple):
    """One finding of a rule, without its id (the registry stamps it)."""

    rank: int | None
    at_stake_ms: float
    title: str
    detail: str
    fix: str
    test: str
    level: Literal["info", "warn"] = "warn"


@dataclass
class TraceFacts:
    """What the rules judge: the ranks, the collectives table (per rank or pooled over ranks:
    rank -1, whose findings then name no rank), the cross-rank lateness."""

    traces: list[RankTrace]
    rows: list[TraceCollectiveRecord]
    across: Across | None

    @cached_property
    def small_all_reduces(self) -> tuple[int, float, float, dict[int, float]] | None:
        """(row rank, calls per step, exposed ms per step, exposed ms per traced rank) of the
        worst latency-bound all-reduces when there are MANY_PER_STEP or more per step: what
        the small-all-reduces finding claims (comm-exposed does not count it again)."""
        small = _small_all_reduces(self.traces, self.rows)
        if not small:
            return None
        rank, (calls, ms, per_trace) = max(small.items(), key=lambda kv: kv[1][1])
        return (rank, calls, ms, per_trace) if calls >= MANY_PER_STEP else None


Check = Callable[[TraceFacts], Iterable[Verdict]]
AREA = "trace"                      # every trace rule's area (doctor's rules have several)
REGISTRY: Registry[Check] = Registry((AREA,))
RULES = REGISTRY.rules
rule = REGISTRY.rule                # @rule(id, AREA, explanation) on a check


def findings(traces: list[RankTrace], rows: list[TraceCollectiveRecord],
             across: Across | None) -> list[FindingRecord]:
    """Every registered rule on these facts, the most step time at stake first."""
    facts = TraceFacts(traces, rows, across)
    found = [FindingRecord(id=entry.id, level=v.level, rank=v.rank, at_stake_ms=v.at_stake_ms,
                           title=v.title, detail=v.detail, fix=v.fix, test=v.test)
             for entry in RULES.values() if entry.check for v in entry.check(facts)]
    found.sort(key=lambda f: -f.at_stake_ms)
    return found


@rule("small-all-reduces", AREA, """Many all-reduces under 1 MiB per step each pay the collective's
latency; fewer, larger messages (larger DDP buckets, FSDP units) amortise it.""")
def small_all_reduces(facts: TraceFacts) -> Iterable[Verdict]:
    # Rank-wise rules report the worst rank (a job's ranks usually share the same problem).
    if facts.small_all_reduces is None:
        return
    rank, calls, ms, _ = facts.small_all_reduces
    yield Verdict(
        rank=_rank(rank), at_stake_ms=ms,
        title=f"{calls:.4g} small all-reduces per step",
        detail="each pays the collective's latency; fewer, larger messages amortise it. "
               "At stake: per step, the time these calls run with no compute running "
               "(a row of unknown size counts only its calls under "
               f"{LATENCY_BOUND_US:g} us; the comm-exposed finding does not count this "
               "time again)",
        fix="DDP: raise bucket_cap_mb (collscope train --sweep bucket_cap_mb=25,50,100 "
            "measures it); FSDP: larger wrapping units",
        test=f"rule: >= {MANY_PER_STEP} all-reduces per step under 1 MiB (size unknown: "
             f"calls whose own kernel < {LATENCY_BOUND_US:g} us, in rows whose p50 is)")


@rule("comm-exposed", AREA, """Communication that compute does not hide (HolisticTraceAnalysis'
overlap below 50%) while at least 10% of the step waits on it: the step is as long as the
collectives it does not overlap.""")
def comm_exposed(facts: TraceFacts) -> Iterable[Verdict]:
    exposed = [t for t in facts.traces if t.overlap_percent is not None and t.steps
               and t.overlap_percent < EXPOSED_OVERLAP_PERCENT]
    if not exposed:
        return
    claimed = facts.small_all_reduces[3] if facts.small_all_reduces else {}
    worst = max(exposed, key=lambda t: t.exposed_comm_ms)
    step_ms = sum(s.step_ms for s in worst.steps)
    share = 100.0 * worst.exposed_comm_ms / step_ms if step_ms > 0 else 0.0
    taken = min(claimed.get(worst.rank, 0.0), worst.exposed_comm_ms)
    if share < EXPOSED_SHARE_PERCENT:
        return
    yield Verdict(
        rank=worst.rank, at_stake_ms=(worst.exposed_comm_ms - taken) / _steps(worst),
        title=f"communication is exposed: {worst.overlap_percent:.1f}% overlapped, "
              f"{share:.0f}% of step time waits on it",
        detail="compute does not run while the collectives do" + (
            f"; at stake: the exposed time per step less the "
            f"{taken / _steps(worst):.3g} ms/step the small-all-reduces finding claims"
            if taken > 0 else "; at stake: the exposed time per step"),
        fix="DDP: gradient_as_bucket_view=True and buckets that fill in backward order "
            "(static_graph=True); FSDP: forward/backward prefetch; keep collectives on "
            "their own stream",
        test=f"rule: overlap < {EXPOSED_OVERLAP_PERCENT:g}% and exposed >= "
             f"{EXPOSED_SHARE_PERCENT:g}% of step time (HTA's overlap definition)")


@rule("straggler", AREA, """One rank is the late rank (ready last, by more than the lateness
margin) in more steps than its fair share 1/N: a one-sided binomial test over the steps,
Bonferroni-corrected for the N ranks; the others wait for it in every collective.""")
def straggler(facts: TraceFacts) -> Iterable[Verdict]:
    across = facts.across
    if across is None or across.straggler is None:
        return
    s = across.straggler
    lateness = next(r for r in across.ranks if r.rank == s.rank)
    steps = max(1, len({m.step for m in across.matched}))
    yield Verdict(
        rank=s.rank, at_stake_ms=lateness.delay_per_step_ms,
        title=f"rank {s.rank} is the late rank in {s.late_steps} of {s.steps} steps "
              f"({s.late_calls} of {s.calls} collectives; fair share 1/{s.ranks})",
        detail=f"per step it is ready for a collective up to "
               f"{lateness.delay_per_step_ms:.3g} ms after the next latest rank; the others "
               f"wait {lateness.wait_caused_ms / steps:.3g} ms per step for it, summed over "
               "ranks",
        fix=f"run `collscope doctor` on rank {s.rank}'s host (throttling, a busy core, a slow "
            "data loader, a degraded link)",
        test=f"{s.test}: p = {s.p_value:.2g} < 0.01")


@rule("below-baseline", AREA, """A collective whose busbw is under half of what collscope bench (or
nccl-tests) measured on this cluster at the same size and rank count: the path it takes, or
a late rank, costs the difference.""")
def below_baseline(facts: TraceFacts) -> Iterable[Verdict]:
    late = facts.across is not None and facts.across.straggler is not None
    for r in facts.rows:
        if r.efficiency is None or r.efficiency >= FAR_BELOW_EFFICIENCY or \
                not r.saving_ms_per_step:
            continue
        yield Verdict(
            rank=_rank(r.rank), at_stake_ms=r.saving_ms_per_step,
            title=f"{r.collective} {r.size_bytes} B on {r.group_size} ranks runs at "
                  f"{100 * r.efficiency:.0f}% of the cluster's measured busbw",
            detail=f"{r.busbw_gbs:.3g} GB/s against {r.baseline_busbw_gbs:.3g} GB/s "
                   f"({r.baseline})" + (
                       "; a rank is late (see the straggler finding): the others' times "
                       "include waiting for it" if late else ""),
            fix="the process group may span nodes over a slow path: `collscope doctor` "
                "network checks; pin the fabric with NCCL_IB_HCA / NCCL_SOCKET_IFNAME",
            test=f"rule: efficiency < {FAR_BELOW_EFFICIENCY:g}")


@rule("comm-on-compute-stream", AREA, """Communication kernels on a stream that also runs compute
serialise with it and can never overlap.""")
def comm_on_compute_stream(facts: TraceFacts) -> Iterable[Verdict]:
    serial = [t for t in facts.traces if t.shared_stream_comm_ms > 0]
    if not serial:
        return
    worst = max(serial, key=lambda t: t.shared_stream_comm_ms)
    yield Verdict(
        rank=worst.rank, at_stake_ms=worst.shared_stream_comm_ms / _steps(worst),
        title=f"{worst.shared_stream_comm_ms:.3g} ms of collectives run on a stream that "
              "also runs compute",
        detail="on one stream they serialise with compute and can never overlap",
        fix="issue collectives on their own stream (async_op=True, or the backend's "
            "default comm stream) instead of the default / compute stream",
        test="rule: a communication kernel shares its stream with compute kernels")
