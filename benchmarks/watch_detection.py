"""Watch detection: precision, recall and time to decide of `collscope watch`'s straggler
verdicts, on labelled streams.

Method: benchmarks/watch_streams.py simulates training jobs (layouts ddp, tp_dp, tp_pp_dp,
fsdp; 8 to 1,024 ranks) with realistic noise and planted stragglers of every shape, each
episode labelled with its rank(s), start and end; and healthy streams with the same noise.
Every stream is fed through the code users run, at --interval: each rank's agent summary
(collscope.watch.summary.summarise of Flight Recorder entries created up to the tick on its
host's clock, merged with the previous interval's as the agent publishes it, encoded as the
store carries it), rank 0's aggregation round 0.2 s later (collscope.watch.aggregate.Rounds:
decoding, clock alignment, matching, the detector) and its finding records
(aggregate.finding).

Scoring: a finding that starts names rank(s); it is right when they are the rank(s) of an
episode running then (or ended at most two intervals before), wrong otherwise (a follower, a
healthy rank, a rank already recovered); precision = right / all findings. An episode is
detected when all its ranks are named (a pair: by one finding that names both); recall =
detected / episodes; detection latency = the finding's time - the episode's start, also in
collectives the rank entered meanwhile; end latency = the finding's end - the episode's end.
Targets: precision >= 0.99, recall >= 0.95 over >= 500 episodes with lateness >= 5 % of the
step, median detection <= 10 s, p90 <= 20 s at --interval 1, no finding over >= 10 hours of
healthy streams. The streams are replayed side by side, one process per CPU (--workers):
the full run took 188 s of CPU, 563 s of wall on this 2-core machine at load average 18-30.
--real adds the real-jobs part (benchmarks/watch_real_jobs.py: plain 4-rank gloo jobs under
`collscope watch` with planted shapes, their verdicts checked; exit code 1 when one is wrong):

    .venv/bin/python benchmarks/watch_detection.py [--seed 1] [--interval 1] [--json FILE]
    .venv/bin/python benchmarks/watch_detection.py --real-only
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from watch_real_jobs import print_rows, run_real  # noqa: E402
from watch_streams import (  # noqa: E402
    CLOCK_RESIDUAL_MS,
    RANKS_PER_HOST,
    Episode,
    Stream,
    rank_of,
    simulate,
)

from collscope.parsers.flight_recorder import FlightEntry  # noqa: E402
from collscope.watch.agent import _with_previous  # noqa: E402
from collscope.watch.aggregate import Rounds, finding  # noqa: E402
from collscope.watch.summary import summarise  # noqa: E402

EPOCH_S = 1_760_000_000
AGGREGATE_AFTER_S = 0.2
TARGET_LATENESS = 0.05
SHAPES = ("persistent", "onset", "intermittent", "once_per_step", "two_at_once", "pair")
EXPECTED_SHAPE = {"persistent": "persistent", "onset": "onset", "intermittent": "intermittent",
                  "once_per_step": "intermittent", "two_at_once": "onset", "pair": "pair"}
LOW_LATENESS = (0.02, 0.03)
LATENESS = (0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5)
LOW_SHARE = 0.1
EPISODES_PER_STREAM = 3
# (layout, ranks, tp, streams per shape: each holds EPISODES_PER_STREAM episodes one after
# another, on other ranks; persistent ones, late from the first step, one each and three
# times the streams)
LAYOUTS = (("ddp", 8, 1, 7), ("ddp", 16, 1, 4), ("ddp", 32, 1, 1), ("tp_dp", 8, 2, 7),
           ("tp_dp", 16, 4, 3), ("tp_pp_dp", 16, 2, 4), ("tp_pp_dp", 32, 4, 1),
           ("fsdp", 8, 1, 6), ("fsdp", 32, 1, 1))
# Larger jobs, fewer streams (one each, a single episode): the cost of a round grows with ranks
BIG = (("ddp", 1024, 1, "onset"), ("ddp", 1024, 1, "persistent"), ("ddp", 256, 1, "onset"),
       ("ddp", 256, 1, "two_at_once"), ("ddp", 256, 1, "intermittent"),
       ("tp_dp", 64, 2, "pair"), ("tp_dp", 64, 2, "onset"), ("tp_dp", 128, 4, "persistent"),
       ("tp_pp_dp", 64, 2, "onset"), ("fsdp", 128, 1, "once_per_step"),
       ("fsdp", 128, 1, "persistent"), ("ddp", 64, 1, "once_per_step"))
# (layout, ranks, tp, streams, seconds each)
HEALTHY = (("ddp", 8, 1, 10, 960), ("ddp", 16, 1, 4, 960), ("ddp", 64, 1, 1, 480),
           ("tp_dp", 8, 2, 8, 960), ("tp_dp", 16, 4, 3, 960), ("tp_pp_dp", 16, 2, 4, 960),
           ("fsdp", 8, 1, 8, 960), ("fsdp", 32, 1, 2, 960), ("ddp", 1024, 1, 1, 60),
           ("fsdp", 128, 1, 1, 240))


@dataclass
class Named:
    time: float
    ranks: list[int]
    kind: str
    shape: str
    ended: float | None = None
    episode: Episode | None = None


@dataclass
class Outcome:
    stream: Stream
    named: list[Named] = field(default_factory=list)
    wall_s: float = 0.0
    # per episode (its index in the stream's): collectives its first rank entered between its
    # start and its detection (the arrivals are dropped once counted: they are large)
    collectives: dict[int, int] = field(default_factory=dict)


def replay(stream: Stream, tp: int, interval: float) -> Outcome:
    """The stream through the agents' summaries, the aggregation rounds and the findings."""
    started = time.perf_counter()
    simulate(stream, tp)
    n = stream.ranks
    rounds = Rounds(range(n))
    # the alignment's spread the aggregator would have measured, as it hands it to the detector
    rounds.detector.clock_ms = {r: CLOCK_RESIDUAL_MS for r in range(RANKS_PER_HOST, n)}
    offset_us = [(stream.offset_ms[r // RANKS_PER_HOST] - stream.residual_ms[r // RANKS_PER_HOST])
                 * 1000 for r in range(n)]
    cursor, previous, ids = [0] * n, [None] * n, [0] * n
    out = Outcome(stream)
    live: dict[tuple[int, ...], Named] = {}
    number, tick = 0, interval
    while tick <= stream.duration_s + interval:
        number += 1
        texts = []
        for r in range(n):
            arrivals, i, new = stream.arrivals[r], cursor[r], []
            while i < len(arrivals) and arrivals[i][2] <= tick:
                group, seq, at = arrivals[i]
                ids[r] += 1
                new.append(FlightEntry(ids[r], 0, (group, ""), seq, 0, ids[r],
                                       "gloo:all_reduce", "completed", True,
                                       int((EPOCH_S + at) * 1e9)))
                i += 1
            cursor[r] = i
            summary = summarise(number, EPOCH_S + tick, new, None, {})
            published = _with_previous(summary, previous[r])
            previous[r] = summary
            texts.append(published.encode())
        now = tick + AGGREGATE_AFTER_S
        for change in rounds.take(texts, range(n), offset_us.__getitem__, number):
            record = finding(change, EPOCH_S + now, lambda r: f"node{r // RANKS_PER_HOST}",
                             lambda r: r % RANKS_PER_HOST, rounds.detector.members)
            key = tuple(record.ranks)
            if change.state == "started":
                live[key] = Named(now, list(key), record.shape, change.shape)
                out.named.append(live[key])
            elif key in live:
                live.pop(key).ended = now
        tick += interval
    out.wall_s = time.perf_counter() - started
    return out


def measure(job: tuple[Stream, int, float]) -> Outcome:
    """One stream replayed and scored (a worker process's task): its arrivals counted per
    episode, then dropped."""
    stream, tp, interval = job
    outcome = replay(stream, tp, interval)
    score(outcome, interval)
    for index, e in enumerate(stream.episodes):
        found = detected_at(outcome, e)
        if found is not None:
            outcome.collectives[index] = collectives_between(stream, e.ranks[0], e.start_s,
                                                             found[0])
    stream.arrivals = []
    return outcome


def plan(seed: int, scale: float = 1.0) -> tuple[list[tuple[Stream, int]],
                                                 list[tuple[Stream, int]]]:
    """The labelled streams and the healthy ones (``scale``: their share, for a quick run)."""
    rnd = random.Random(seed)
    labelled = []
    for layout, ranks, tp, count in LAYOUTS:
        for shape in SHAPES:
            if shape == "pair" and tp != 2:
                continue
            streams = count * (EPISODES_PER_STREAM if shape == "persistent" else 1)
            for _ in range(max(1, round(streams * scale))):
                labelled.append((episode_stream(rnd, layout, ranks, tp, shape), tp))
    for layout, ranks, tp, shape in BIG:
        labelled.append((episode_stream(rnd, layout, ranks, tp, shape, 1), tp))
    healthy = []
    for layout, ranks, tp, count, length in HEALTHY:
        for _ in range(max(1, round(count * scale))):
            healthy.append((Stream(f"{layout}{ranks}-healthy", layout, ranks,
                                   rnd.uniform(0.15, 0.8), length, rnd.randrange(1 << 30)), tp))
    return labelled, healthy


def pick(rnd: random.Random, layout: str, ranks: int, tp: int, shape: str,
         avoid: set[int]) -> list[int]:
    if shape == "pair":
        pp = 2 if layout == "tp_pp_dp" else 1
        while True:
            d, p = rnd.randrange(ranks // (tp * pp)), rnd.randrange(pp)
            pair = [rank_of(d, p, 0, tp, pp), rank_of(d, p, 1, tp, pp)]
            if not avoid & set(pair):
                return pair
    while True:
        picked = rnd.sample(range(ranks), 2 if shape == "two_at_once" else 1)
        if avoid & set(picked) or (len(picked) == 2 and picked[0] // tp == picked[1] // tp):
            continue
        return sorted(picked)


def episode_stream(rnd: random.Random, layout: str, ranks: int, tp: int, shape: str,
                   count: int = EPISODES_PER_STREAM) -> Stream:
    """Episodes of one shape one after another (a persistent one alone, from the start),
    each 30-45 s long, 30-40 s apart, on ranks the previous one did not use."""
    step = rnd.uniform(0.15, 0.8)
    at = 0.0 if shape == "persistent" else rnd.uniform(20, 30)
    episodes: list[Episode] = []
    for _ in range(1 if shape == "persistent" else count):
        lateness = rnd.choice(LOW_LATENESS) if rnd.random() < LOW_SHARE else \
            rnd.choice(LATENESS)
        end = at + rnd.uniform(30, 45)
        avoid = set(episodes[-1].ranks) if episodes else set()
        episodes.append(Episode(shape, pick(rnd, layout, ranks, tp, shape, avoid), at, end,
                                lateness, rnd.choice((2, 3)) if shape == "intermittent" else 1))
        at = end + rnd.uniform(30, 40)
    return Stream(f"{layout}{ranks}-{shape}", layout, ranks, step, at, rnd.randrange(1 << 30),
                  episodes)


def score(outcome: Outcome, interval: float) -> None:
    """Ties each finding to the episode it is right about (``episode``; None: wrong)."""
    for named in outcome.named:
        for e in outcome.stream.episodes:
            if set(named.ranks) <= set(e.ranks) and \
                    e.start_s <= named.time <= e.end_s + 2 * interval:
                named.episode = e


def detected_at(outcome: Outcome, e: Episode) -> tuple[float, list[Named]] | None:
    mine = [n for n in outcome.named if n.episode is e]
    if e.shape == "pair":
        mine = [n for n in mine if sorted(n.ranks) == e.ranks]
    seen: set[int] = set()
    for n in sorted(mine, key=lambda n: n.time):
        seen |= set(n.ranks)
        if seen >= set(e.ranks):
            return n.time, mine
    return None


def collectives_between(stream: Stream, rank: int, start: float, end: float) -> int:
    host = stream.offset_ms[rank // RANKS_PER_HOST] / 1000
    return sum(start <= at - host <= end for _, _, at in stream.arrivals[rank])


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarise_shape(outcomes: list[Outcome], interval: float, shape: str | None) -> dict:
    """Counts and times over the episodes of one shape (None: all)."""
    episodes, latencies, counts, ends, agree = 0, [], [], [], 0
    episodes_5, detected_5, detected, not_ended = 0, 0, 0, 0
    right = wrong = 0
    for o in outcomes:
        for e in o.stream.episodes:
            if shape is not None and e.shape != shape:
                continue
            episodes += 1
            big = e.lateness >= TARGET_LATENESS
            episodes_5 += big
            found = detected_at(o, e)
            if found is None:
                continue
            at, mine = found
            detected += 1
            detected_5 += big
            if big:
                latencies.append(at - e.start_s)
                counts.append(o.collectives[o.stream.episodes.index(e)])
            agree += any(n.shape == EXPECTED_SHAPE[e.shape] for n in mine)
            stops = [n.ended for n in mine]
            if None in stops:
                not_ended += 1
            else:
                ends.append(max(stops) - e.end_s)
        if shape is None or any(e.shape == shape for e in o.stream.episodes):
            right += sum(n.episode is not None for n in o.named)
            wrong += sum(n.episode is None for n in o.named)
    precision = right / (right + wrong) if right + wrong else 1.0
    recall = detected_5 / episodes_5 if episodes_5 else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    def r3(v: float | None) -> float | None:
        return round(v, 3) if v is not None else None

    return {"episodes": episodes, "episodes_5pct": episodes_5, "findings": right + wrong,
            "wrong_findings": wrong, "precision": r3(precision), "recall": r3(recall),
            "recall_all": r3(detected / episodes if episodes else 1.0), "f1": r3(f1),
            "detect_median_s": r3(statistics.median(latencies) if latencies else None),
            "detect_p90_s": r3(quantile(latencies, 0.9)),
            "detect_median_collectives": statistics.median(counts) if counts else None,
            "detect_p90_collectives": quantile(counts, 0.9),
            "end_median_s": r3(statistics.median(ends) if ends else None),
            "end_p90_s": r3(quantile(ends, 0.9)), "not_ended": not_ended,
            "shape_named": r3(agree / detected if detected else None)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--json", metavar="FILE", help="JSON Lines: detection_shape records "
                        "and one detection_summary")
    parser.add_argument("--quick", action="store_true", help="a fifth of the streams (a "
                        "check that it runs, not the measurement)")
    parser.add_argument("--only", metavar="NAME", help="only the streams whose name starts "
                        "so (e.g. tp_dp8-pair): to look at one case")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="processes replaying streams side by side (default: one per "
                        "CPU)")
    parser.add_argument("--real", action="store_true", help="also the real-jobs part: plain "
                        "4-rank gloo jobs with planted shapes under `collscope watch` "
                        "(benchmarks/watch_real_jobs.py; a few minutes)")
    parser.add_argument("--real-only", action="store_true", help="only the real-jobs part")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers {args.workers}: at least 1")
    begun = time.perf_counter()
    real = run_real() if args.real or args.real_only else []
    if real:
        print_rows(real)
    if args.real_only:
        _write(args.json, real)
        return 0 if all(row["ok"] for row in real) else 1
    labelled, healthy = plan(args.seed, 0.2 if args.quick else 1.0)
    if args.only:
        labelled = [(s, tp) for s, tp in labelled if s.name.startswith(args.only)]
        healthy = [(s, tp) for s, tp in healthy if s.name.startswith(args.only)]
    jobs = [(s, tp, args.interval) for s, tp in labelled + healthy]
    # the largest first, so the workers end together
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i][0].ranks * jobs[i][0].duration_s)
    results: dict[int, Outcome] = {}
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for done, (index, outcome) in enumerate(
                zip(order, pool.map(measure, [jobs[i] for i in order]))):
            results[index] = outcome
            if done % 50 == 0:
                print(f"{done}/{len(jobs)} streams, {time.perf_counter() - begun:.0f} s",
                      file=sys.stderr, flush=True)
    outcomes = [results[i] for i in range(len(labelled))]
    for outcome in outcomes:
        stream = outcome.stream
        wrong = [n for n in outcome.named if n.episode is None]
        if wrong:
            print(f"wrong: {stream.name} seed {stream.seed} {stream.episodes} named "
                  f"{[(n.ranks, n.kind, round(n.time, 1)) for n in wrong]}", file=sys.stderr)
    alarms, healthy_s = 0, 0.0
    for index in range(len(labelled), len(jobs)):
        outcome = results[index]
        stream = outcome.stream
        alarms += len(outcome.named)
        healthy_s += stream.duration_s
        for n in outcome.named:
            print(f"false alarm: {stream.name} seed {stream.seed} {n}", file=sys.stderr)
    records = []
    print(f"{'shape':<14} {'episodes':>8} {'>=5%':>5} {'prec':>6} {'recall':>6} {'F1':>6} "
          f"{'det p50 s':>9} {'det p90 s':>9} {'colls p50':>9} {'end p50 s':>9} "
          f"{'end p90 s':>9} {'shape ok':>8}")
    for shape in (*SHAPES, None):
        row = summarise_shape(outcomes, args.interval, shape)
        name = shape or "all"
        print(f"{name:<14} {row['episodes']:>8} {row['episodes_5pct']:>5} "
              + " ".join(f"{_fmt(row[k]):>{w}}" for k, w in (
                  ("precision", 6), ("recall", 6), ("f1", 6), ("detect_median_s", 9),
                  ("detect_p90_s", 9), ("detect_median_collectives", 9), ("end_median_s", 9),
                  ("end_p90_s", 9), ("shape_named", 8))))
        if shape is not None:
            records.append({"kind": "detection_shape", "shape": shape, **row})
        else:
            hours = healthy_s / 3600
            summary = {"kind": "detection_summary", **row, "false_alarms": alarms,
                       "false_alarms_per_hour": round(alarms / hours, 4) if hours else None,
                       "healthy_hours": round(hours, 2), "healthy_streams": len(healthy),
                       "labelled_streams": len(labelled), "interval_s": args.interval,
                       "seed": args.seed, "wall_s": round(time.perf_counter() - begun, 1),
                       "recall_counts": "episodes with lateness >= 5 % of the step"}
            records.append(summary)
    per_hour = alarms / (healthy_s / 3600) if healthy_s else 0.0
    print(f"healthy: {alarms} false alarm(s) over {healthy_s / 3600:.1f} h of "
          f"{len(healthy)} streams ({per_hour:.3f} per hour); "
          f"wall {time.perf_counter() - begun:.0f} s; precision over all findings, recall "
          f"over episodes with lateness >= 5 % of the step, interval {args.interval:g} s")
    _write(args.json, real + records)
    return 0 if all(row["ok"] for row in real) else 1


def _write(path: str | None, records: list[dict]) -> None:
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record) + "\n")


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    sys.exit(main())
