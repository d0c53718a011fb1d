"""Labelled streams for benchmarks/watch_detection.py: when every rank enters every collective
of a simulated training job, with the layout's groups, realistic noise and planted stragglers.

The job is simulated step by step as ranks that compute, then enter a collective and leave it
together when its last member arrived (plus the collective's own duration): so a late rank
holds up its group, its group's members then enter their next collective late together (a
tensor-parallel peer's delay reaches the data-parallel collective that follows), and in a
pipeline a stage waits for the one before it (point-to-point, which the agents' summaries do
not carry). What comes out is per rank the (group, seq, enqueue time) the Flight Recorder
would record, on the rank's host clock.

Layouts (TP = 2 or 4, PP = 2, 8 ranks per host):
  ddp        one group, backward in 2-4 buckets, an all_reduce each
  tp_dp      per layer a TP all_reduce forward and backward, then the DP all_reduce
  tp_pp_dp   the same per pipeline stage, stages in order forward and reverse backward
  fsdp       one group: per layer an all_gather forward, an all_gather and a
             reduce_scatter backward

Noise on every stream: each rank's compute jitters (normal around its length, sd 0.3 % of the
segment, at least 0.05 ms), each arrival by another 0.05-0.3 ms; one host's ranks jitter 2 x
more (contended);
heavy-tailed pauses (Pareto, alpha 1.5, from 5 ms, at most 2 s) that hit one rank at a time
(garbage collection, its data loader) about once per 40 s per rank, and ones that hit every
rank at once (a checkpoint, the shared file system) once per 90 s; each host's clock off by up
to +-20 ms, of which +-0.3 ms is left after the aggregator's alignment (the clock exchange's
measured spread).

Shapes (lateness L is the rank's average lateness per step, as a share of the step time T):
  persistent     slow from the first step: every compute segment of the rank longer, by L x
                 the step over its compute
  onset          the same from a step mid-run
  intermittent   every k-th step (k = 2-3) k x L x T late before the step
  once_per_step  L x T late once per step before its first collective (fsdp: the first
                 all_gather of the step; the rest runs in lockstep)
  two_at_once    two ranks of different hosts slow together (persistent from mid-run)
  pair           the collective of one 2-rank TP group is slow: both ranks late together
                 everywhere else, on time against each other (their link)
Each episode recovers (ends) before the stream does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

RANKS_PER_HOST = 8
CLOCK_OFFSET_MS = 20.0
CLOCK_RESIDUAL_MS = 0.3
JITTER = 0.003
MIN_JITTER_MS = 0.05
CONTENDED = 2.0
RANK_PAUSE_EVERY_S = 40.0
JOB_PAUSE_EVERY_S = 90.0


@dataclass
class Episode:
    shape: str
    ranks: list[int]
    start_s: float
    end_s: float
    lateness: float                 # average lateness per step, as a share of the step
    every: int = 1                  # intermittent: every k-th step


@dataclass
class Stream:
    name: str
    layout: str
    ranks: int
    step_s: float
    duration_s: float
    seed: int
    episodes: list[Episode] = field(default_factory=list)
    # per rank: (group, seq, enqueue time in s on the rank's host clock), in enqueue order
    arrivals: list[list[tuple[str, int, float]]] = field(default_factory=list)
    residual_ms: dict[int, float] = field(default_factory=dict)   # host -> alignment left
    offset_ms: dict[int, float] = field(default_factory=dict)     # host -> clock offset


@dataclass
class Op:
    kind: str                # compute | coll | wait (a pipeline stage waits for the one before)
    share: float = 0.0       # compute: share of the step
    groups: list[list[int]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    duration_ms: float = 0.5
    first: bool = False      # the step's first collective of these ranks
    pairs: list[tuple[int, int]] = field(default_factory=list)   # wait: (before, after) ranks


def grid(ranks: int, tp: int, pp: int) -> tuple[int, int, int]:
    dp = ranks // (tp * pp)
    return tp, pp, dp


def rank_of(d: int, p: int, t: int, tp: int, pp: int) -> int:
    return (d * pp + p) * tp + t


def program(layout: str, ranks: int, tp: int, layers: int, rnd: random.Random
            ) -> tuple[list[Op], dict[str, list[int]]]:
    """One step's ops and the layout's groups (name -> members)."""
    every = list(range(ranks))
    if layout == "ddp":
        buckets = rnd.randint(2, 4)
        ops = [Op("compute", 0.35, [every])]
        for b in range(buckets):
            ops += [Op("compute", 0.6 / buckets, [every]),
                    Op("coll", groups=[every], names=["0"], duration_ms=2.0, first=b == 0)]
        return ops + [Op("compute", 0.05, [every])], {"0": every}
    if layout == "fsdp":
        ops = []
        for i in range(layers):
            ops += [Op("coll", groups=[every], names=["0"], duration_ms=1.0, first=i == 0),
                    Op("compute", 0.3 / layers, [every])]
        for _ in range(layers):
            ops += [Op("coll", groups=[every], names=["0"], duration_ms=1.0),
                    Op("compute", 0.6 / layers, [every]),
                    Op("coll", groups=[every], names=["0"], duration_ms=1.5)]
        return ops + [Op("compute", 0.1, [every])], {"0": every}
    pp = 2 if layout == "tp_pp_dp" else 1
    tp, pp, dp = grid(ranks, tp, pp)
    groups: dict[str, list[int]] = {}
    tp_names = {}
    for d in range(dp):
        for p in range(pp):
            name = str(1 + len(groups))
            groups[name] = [rank_of(d, p, t, tp, pp) for t in range(tp)]
            tp_names[(d, p)] = name
    dp_names = {}
    for p in range(pp):
        for t in range(tp):
            name = str(1 + len(groups))
            groups[name] = [rank_of(d, p, t, tp, pp) for d in range(dp)]
            dp_names[(p, t)] = name

    def stage(p: int) -> list[int]:
        return [rank_of(d, p, t, tp, pp) for d in range(dp) for t in range(tp)]

    def tp_op(p: int, first: bool) -> Op:
        keys = [(d, p) for d in range(dp)]
        return Op("coll", groups=[groups[tp_names[k]] for k in keys],
                  names=[tp_names[k] for k in keys], duration_ms=0.5, first=first)

    def hand_over(frm: int, to: int) -> Op:
        return Op("wait", pairs=[(rank_of(d, frm, t, tp, pp), rank_of(d, to, t, tp, pp))
                                 for d in range(dp) for t in range(tp)])

    ops: list[Op] = []
    for p in range(pp):                               # forward, stage by stage
        if p:
            ops.append(hand_over(p - 1, p))
        for i in range(layers):
            ops += [Op("compute", 0.3 / layers / pp, [stage(p)]), tp_op(p, i == 0)]
    for p in reversed(range(pp)):                     # backward, in reverse
        if p < pp - 1:
            ops.append(hand_over(p + 1, p))
        for _ in range(layers):
            ops += [Op("compute", 0.6 / layers / pp, [stage(p)]), tp_op(p, False)]
    for p in range(pp):
        keys = [(p, t) for t in range(tp)]
        ops.append(Op("coll", groups=[groups[dp_names[k]] for k in keys],
                      names=[dp_names[k] for k in keys], duration_ms=3.0))
    return ops + [Op("compute", 0.1, [every])], {"0": every, **groups}


def pareto_ms(rnd: random.Random) -> float:
    return min(2000.0, 5.0 * rnd.paretovariate(1.5))


def simulate(stream: Stream, tp: int = 2, layers: int = 2) -> dict[str, list[int]]:
    """Fills ``stream.arrivals`` (and the hosts' clocks); returns the groups."""
    rnd = random.Random(stream.seed)
    ops, groups = program(stream.layout, stream.ranks, tp, layers, rnd)
    n, step_s = stream.ranks, stream.step_s
    hosts = max(1, n // RANKS_PER_HOST)
    contended = rnd.randrange(hosts)
    scale = [CONTENDED if r // RANKS_PER_HOST == contended else 1.0 for r in range(n)]
    for h in range(hosts):
        stream.offset_ms[h] = rnd.uniform(-CLOCK_OFFSET_MS, CLOCK_OFFSET_MS)
        stream.residual_ms[h] = rnd.uniform(-CLOCK_RESIDUAL_MS, CLOCK_RESIDUAL_MS)
    compute = [0.0] * n               # each rank's compute as a share of the step
    for op in ops:
        for members in op.groups if op.kind == "compute" else []:
            for r in members:
                compute[r] += op.share
    slow_link = {tuple(sorted(e.ranks)): e for e in stream.episodes if e.shape == "pair"}
    seqs = {name: 0 for name in groups}
    per_step = {name: sum(o.kind == "coll" and name in o.names for o in ops) for name in groups}
    arrivals: list[list[tuple[str, int, float]]] = [[] for _ in range(n)]
    ready = [0.0] * n
    step = 0
    next_job_pause = rnd.expovariate(1 / JOB_PAUSE_EVERY_S)
    rank_pause_rate = step_s / RANK_PAUSE_EVERY_S
    while min(ready) < stream.duration_s:
        now = min(ready)
        active = [e for e in stream.episodes if e.start_s <= now < e.end_s]
        slow = [0.0] * n                 # extra share of every compute segment
        before = [0.0] * n               # seconds late before the step's first collective
        for e in active:
            for r in e.ranks:
                if e.shape in ("persistent", "onset", "two_at_once"):
                    slow[r] += e.lateness / compute[r]
                elif e.shape == "once_per_step":
                    before[r] += e.lateness * step_s
                elif e.shape == "intermittent" and step % e.every == 0:
                    before[r] += e.lateness * e.every * step_s
        if now >= next_job_pause:
            pause = pareto_ms(rnd) / 1000
            ready = [t + pause + rnd.uniform(0, 0.0005) for t in ready]
            next_job_pause += rnd.expovariate(1 / JOB_PAUSE_EVERY_S)
        for r in range(n):
            if rnd.random() < rank_pause_rate:
                ready[r] += pareto_ms(rnd) / 1000
        for op in ops:
            if op.kind == "compute":
                for members in op.groups:
                    for r in members:
                        seg = op.share * step_s * (1 + slow[r])
                        sd = max(JITTER * seg, MIN_JITTER_MS / 1000) * scale[r]
                        ready[r] += max(0.0, seg + rnd.gauss(0, sd))
            elif op.kind == "wait":
                for a, b in op.pairs:
                    ready[b] = max(ready[b], ready[a] + 0.0002)
            else:
                for name, members in zip(op.names, op.groups):
                    seqs[name] += 1
                    times = {}
                    for r in members:
                        t = ready[r] + (before[r] if op.first else 0.0)
                        t += rnd.uniform(0.00005, 0.0003) * scale[r]
                        times[r] = t
                        host = r // RANKS_PER_HOST
                        arrivals[r].append((name, seqs[name],
                                            t + stream.offset_ms[host] / 1000))
                    extra = 0.0
                    link = slow_link.get(tuple(sorted(members)))
                    if link is not None and link.start_s <= now < link.end_s:
                        extra = link.lateness * step_s / per_step[name]
                    end = max(times.values()) + op.duration_ms / 1000 + extra
                    for r in members:
                        ready[r] = end
        step += 1
    stream.arrivals = arrivals
    return groups
