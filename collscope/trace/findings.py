"""What to change (pure rules): trace facts -> findings with a fix, ranked by the step time at
stake (milliseconds per step)."""

from __future__ import annotations

from collscope.results import FindingRecord, TraceCollectiveRecord
from collscope.trace.across import Across
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


def findings(traces: list[RankTrace], rows: list[TraceCollectiveRecord],
             across: Across | None) -> list[FindingRecord]:
    """``rows``: the collectives table, per rank or pooled over ranks (rank -1: each finding
    then names no rank)."""
    found: list[FindingRecord] = []
    by_rank = {t.rank: t for t in traces}
    # Rank-wise rules report the worst rank (a job's ranks usually share the same problem).
    small = [r for r in rows if r.collective == "all_reduce" and r.calls_per_step and (
        r.size_bytes < SMALL_ALL_REDUCE_BYTES if r.size_bytes is not None
        else r.kernel_us_p50 < LATENCY_BOUND_US)]
    per_rank_small: dict[int, tuple[float, float]] = {}
    for r in small:
        calls, ms = per_rank_small.get(r.rank, (0.0, 0.0))
        steps = _steps(by_rank.get(r.rank)) if r.rank >= 0 else sum(map(_steps, traces))
        per_rank_small[r.rank] = (calls + (r.calls_per_step or 0),
                                  ms + r.kernel_ms_total / steps)
    if per_rank_small:
        rank, (calls, ms) = max(per_rank_small.items(), key=lambda kv: kv[1][1])
        if calls >= MANY_PER_STEP:
            found.append(FindingRecord(
                id="small-all-reduces", level="warn", rank=_rank(rank), at_stake_ms=ms,
                title=f"{calls:g} small all-reduces per step",
                detail="each pays the collective's latency; fewer, larger messages amortise it",
                fix="DDP: raise bucket_cap_mb (collscope train --sweep bucket_cap_mb=25,50,100 "
                    "measures it); FSDP: larger wrapping units",
                test=f"rule: >= {MANY_PER_STEP} all-reduces per step under 1 MiB (size unknown: "
                     f"p50 kernel < {LATENCY_BOUND_US:g} us)"))
    exposed = [t for t in traces if t.overlap_percent is not None and t.steps
               and t.overlap_percent < EXPOSED_OVERLAP_PERCENT]
    if exposed:
        worst = max(exposed, key=lambda t: t.exposed_comm_ms)
        step_ms = sum(s.step_ms for s in worst.steps)
        share = 100.0 * worst.exposed_comm_ms / step_ms if step_ms > 0 else 0.0
        if share >= EXPOSED_SHARE_PERCENT:
            found.append(FindingRecord(
                id="comm-exposed", level="warn", rank=worst.rank,
                at_stake_ms=worst.exposed_comm_ms / _steps(worst),
                title=f"communication is exposed: {worst.overlap_percent:.1f}% overlapped, "
                      f"{share:.0f}% of step time waits on it",
                detail="compute does not run while the collectives do",
                fix="DDP: gradient_as_bucket_view=True and buckets that fill in backward order "
                    "(static_graph=True); FSDP: forward/backward prefetch; keep collectives on "
                    "their own stream",
                test=f"rule: overlap < {EXPOSED_OVERLAP_PERCENT:g}% and exposed >= "
                     f"{EXPOSED_SHARE_PERCENT:g}% of step time (HTA's overlap definition)"))
    if across is not None and across.straggler is not None:
        s = across.straggler
        lateness = next(r for r in across.ranks if r.rank == s.rank)
        steps = max(1, len({m.step for m in across.matched}))
        found.append(FindingRecord(
            id="straggler", level="warn", rank=s.rank,
            at_stake_ms=lateness.delay_per_step_ms,
            title=f"rank {s.rank} is the late rank in {s.late_steps} of {s.steps} steps "
                  f"({s.late_calls} of {s.calls} collectives; fair share 1/{s.ranks})",
            detail=f"per step it is ready for a collective up to "
                   f"{lateness.delay_per_step_ms:.3g} ms after the next latest rank; the others "
                   f"wait {lateness.wait_caused_ms / steps:.3g} ms per step for it, summed over "
                   "ranks",
            fix=f"run `collscope doctor` on rank {s.rank}'s host (throttling, a busy core, a slow "
                "data loader, a degraded link)",
            test=f"{s.test}: p = {s.p_value:.2g} < 0.01"))
    for r in rows:
        if r.efficiency is not None and r.efficiency < FAR_BELOW_EFFICIENCY and \
                r.saving_ms_per_step:
            found.append(FindingRecord(
                id="below-baseline", level="warn", rank=_rank(r.rank),
                at_stake_ms=r.saving_ms_per_step,
                title=f"{r.collective} {r.size_bytes} B on {r.group_size} ranks runs at "
                      f"{100 * r.efficiency:.0f}% of the cluster's measured busbw",
                detail=f"{r.busbw_gbs:.3g} GB/s against {r.baseline_busbw_gbs:.3g} GB/s "
                       f"({r.baseline})" + (
                           "; a rank is late (see the straggler finding): the others' times "
                           "include waiting for it" if across and across.straggler else ""),
                fix="the process group may span nodes over a slow path: `collscope doctor` "
                    "network checks; pin the fabric with NCCL_IB_HCA / NCCL_SOCKET_IFNAME",
                test=f"rule: efficiency < {FAR_BELOW_EFFICIENCY:g}"))
    serial = [t for t in traces if t.shared_stream_comm_ms > 0]
    if serial:
        worst = max(serial, key=lambda t: t.shared_stream_comm_ms)
        found.append(FindingRecord(
            id="comm-on-compute-stream", level="warn", rank=worst.rank,
            at_stake_ms=worst.shared_stream_comm_ms / _steps(worst),
            title=f"{worst.shared_stream_comm_ms:.3g} ms of collectives run on a stream that "
                  "also runs compute",
            detail="on one stream they serialise with compute and can never overlap",
            fix="issue collectives on their own stream (async_op=True, or the backend's "
                "default comm stream) instead of the default / compute stream",
            test="rule: a communication kernel shares its stream with compute kernels"))
    found.sort(key=lambda f: -f.at_stake_ms)
    return found
