"""Rank 0's agent: joins every rank's summary, runs the detectors, and sends the records.

Each round it reads all ranks' latest summaries in one ``multi_get`` and hands them to
:class:`Rounds`, the pure core (summaries as the store holds them -> collectives matched by
(group, seq) on aligned clocks -> the detector's changes), then sends a ``watch_window``
record per rank and group, a ``finding`` per straggler that starts or ends
(:func:`finding`, pure), and, when a stall was flagged, collects the dumps (waiting at most
DUMP_DEADLINE_S) and sends ``watch_stall``. The detection benchmark
(benchmarks/watch_detection.py) drives the same Rounds and finding.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from collscope.records.watch import StallRecord, StragglerFinding, WatchJobRecord, WatchWindowRecord
from collscope.runtime.gc_pause import gc_paused
from collscope.versions import library_versions
from collscope.watch import detect, dumps, exchange
from collscope.watch.bandwidth import Timed
from collscope.watch.clocks import NO_ANSWER, Clocks
from collscope.watch.columns import HostRecord
from collscope.watch.levels import HostRead
from collscope.watch.match import Matcher
from collscope.watch.summary import Summary

DUMP_DEADLINE_S = 8.0
# The most watch_window records rank 0 writes per round and group (at thousands of ranks,
# one per rank every round would cost rank 0 more than the whole aggregation).
WINDOW_RECORDS_PER_ROUND = 128


def _bandwidth(timed: tuple[int, dict[str, Timed]] | None) -> tuple[Any, ...]:
    """The window record's (group_size, timed_calls, algbw_gbs, busbw_gbs) from a rank's
    timed calls of one group (all None when it has none)."""
    if not timed:
        return None, None, None, None
    members, ops = timed
    rates = {op: t.rates(op, members) for op, t in sorted(ops.items())}
    return (members, {op: ops[op].calls for op in rates},
            {op: round(a, 3) for op, (a, _) in rates.items()},
            {op: round(b, 3) for op, (_, b) in rates.items()})


def _clock(unix_s: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(unix_s))


class Rounds:
    """The pure core of an aggregation round: each rank's summary as the store holds it ->
    matched collectives -> the stragglers that started or ended. A levelled aggregation can
    feed matched collectives to ``detector`` itself."""

    def __init__(self, ranks: Iterable[int]) -> None:
        self.matcher = Matcher(ranks)
        self.detector = detect.Detector()
        self.summaries: dict[int, Summary] = {}           # decoded (a rank's own key)
        self._records: dict[int, HostRecord] = {}         # in its host's record

    def take(self, texts: Sequence[str | bytes], ranks: Sequence[int],
             offset_us: Callable[[int], float], number: int) -> list[detect.Change]:
        return self.take_decoded(((r, Summary.decode(t)) for r, t in zip(ranks, texts)),
                                 offset_us, number)

    def take_decoded(self, summaries: Iterable[tuple[int, Summary]],
                     offset_us: Callable[[int], float], number: int) -> list[detect.Change]:
        """``summaries``: (rank, summary) as a source read them this round (every rank's
        key, exchange.FlatSource)."""
        self._add(summaries, offset_us, number)
        return self._detect(number)

    def take_hosts(self, read: HostRead, offset_us: Callable[[int], float],
                   number: int) -> list[detect.Change]:
        """One record per host (levels.HostRecords): each collective's arrivals on a host's
        ranks joined in one step; the ranks read one by one after them."""
        for _, record in read.records:
            offset = offset_us(record.leader)       # one clock per host
            self.matcher.add_host(record, offset, number)
            self._records.update(dict.fromkeys(record.ranks, record))
            if self.summaries:
                for rank in record.ranks:
                    self.summaries.pop(rank, None)
        self._add(read.direct, offset_us, number)
        return self._detect(number)

    def _add(self, summaries: Iterable[tuple[int, Summary]],
             offset_us: Callable[[int], float], number: int) -> None:
        for rank, summary in summaries:
            self.matcher.add(rank, summary.arrivals, offset_us(rank), number)
            # kept for the window records only: without its arrivals (matched now), a
            # round's thousands of (seq, us) pairs are not held until the next round
            summary.arrivals = {}
            self.summaries[rank] = summary
            self._records.pop(rank, None)

    def _detect(self, number: int) -> list[detect.Change]:
        self.detector.feed(self.matcher.close(number))
        return self.detector.changes()

    def summary(self, rank: int) -> Summary | None:
        """The rank's latest summary, less its arrivals (decoded from its host's record
        only when asked for)."""
        found = self.summaries.get(rank)
        if found is None and rank in self._records:
            found = self._records[rank].summary(rank)
        return found


def layout(members: dict[str, set[int]]) -> str:
    """e.g. '8 ranks, 6 groups (1 of 8, 4 of 2, 1 of 4), up to 3 per rank'."""
    ranks = set().union(*members.values()) if members else set()
    sizes: dict[int, int] = {}
    for m in members.values():
        sizes[len(m)] = sizes.get(len(m), 0) + 1
    per_rank = max((sum(r in m for m in members.values()) for r in ranks), default=0)
    return (f"{len(ranks)} ranks, {len(members)} group(s) ("
            + ", ".join(f"{n} of {size}" for size, n in sorted(sizes.items(), reverse=True))
            + f"), up to {per_rank} per rank")


def _names(ranks: list[int], host: Callable[[int], str]) -> str:
    return ", ".join(f"{r} ({host(r)})" for r in ranks)


def finding(change: detect.Change, now: float, host: Callable[[int], str],
            local: Callable[[int], int | None], members: dict[str, set[int]]
            ) -> StragglerFinding:
    """The ``finding`` record (and its printed title) of a straggler that started or ended."""
    s, v = change.straggler, change.verdict
    who = (f"rank {_names(s.ranks, host)}" if s.kind == "rank"
           else f"{s.kind} of ranks {_names(s.ranks, host)}")
    groups = ", ".join(s.groups)
    cost = (f"{s.cost_ms_per_s:.0f} ms per s ({s.cost_ms_per_s / 10:.1f} % of the job's "
            f"time)")
    if change.state == "started":
        title = f"straggler ({change.shape}): {who} in group(s) {groups}"
        if s.link is not None:
            title += f" (on time against each other in group {s.link}: its collective is slow)"
        title += (f": costs the others {cost}, late {v.delay_ms:.1f} ms (median) in "
                  f"{v.hits}/{v.window} collectives of group {v.group} (binomial "
                  f"p={v.p:.2g} against its {v.members - 1} peers)")
        if change.p_rise is not None and change.shape == "onset":
            title += f", a rise on its own earlier delays (Mann-Whitney p={change.p_rise:.2g})"
        if s.followers:
            title += (f"; delays rank(s) {', '.join(map(str, s.followers))} (they wait on it, "
                      f"then arrive late)")
        title += f"; since {_clock(v.since_us / 1e6)}"
    else:
        title = (f"straggler ended: {who} in group(s) {groups}: cost now below "
                 f"{detect.MIN_SHARE * 50:.0f} % or no longer above its peers")
    test = (f"binomial p={v.p:.2g} (Bonferroni x {v.members} ranks; {v.hits} of {v.late_total} "
            f"late collectives of {v.window} in the window, threshold {v.theta_ms:.1f} ms; "
            f"cost {v.cost_ms:.0f} ms over its {v.span_s:.1f} s run)"
            + (f", Mann-Whitney p={change.p_rise:.2g}" if change.p_rise is not None else "")
            + "; " + detect.METHOD)
    return StragglerFinding(
        change.state, now, s.ranks[0], host(s.ranks[0]), local(s.ranks[0]), v.group,
        v.since_us / 1e6, round(v.delay_ms, 3), round(change.baseline_ms, 3),
        round(v.cost_ms, 3), v.hits, v.window, v.p, change.p_rise, title, test, change.shape,
        list(s.ranks), list(s.groups), list(s.followers), s.link, layout(members),
        round(s.cost_ms_per_s, 3), round(s.cost_ms_per_s / 10, 3))


class Aggregator:
    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.store = agent.store
        self.hellos: dict[int, exchange.Hello] = {}
        self.offset_us: dict[str, float] = {}
        self.rounds = Rounds(range(agent.world_size))
        self.source: Any = None
        self._host_of: dict[int, str] = {}
        self._turn = 0
        self._waits: dict[tuple[str, int], float] = {}    # a window collective's wait caused
        self.collected = False
        self.clocks = Clocks(None, lambda: None, {}, lambda: True)   # begin() makes the real one

    def begin(self, hellos: list[exchange.Hello], source: Any = None) -> None:
        """``source``: where the summaries come from (exchange.FlatSource, the default, or
        levels.HostRecords); the matcher gets the same summaries from either."""
        self.hellos = {h.rank: h for h in hellos}
        self._host_of = {h.rank: h.host for h in hellos}
        self.rounds = Rounds(sorted(self.hellos))
        self.source = source or exchange.FlatSource(self.store, sorted(self.hellos))
        lead = exchange.leaders(hellos)
        host0 = self.hellos[0].host if 0 in self.hellos else ""
        followers = {rank: host for host, rank in lead.items() if host != host0}
        self.clocks = Clocks(self.store, lambda: exchange.connect(
            self.agent._default_store, exchange.prefix(os.environ)), followers,
            self.agent._stop.is_set)
        clock: dict[str, Any] = {"method": exchange.CLOCK_METHOD, "reference_host": host0}
        if not followers:
            clock.update(applied=False, reason="every rank on one host: one clock",
                         offsets_us={}, spread_us={})
        else:
            found = self.clocks.first()
            if found is None:
                clock.update(applied=False, offsets_us={}, spread_us={},
                             reason=f"{NO_ANSWER}; times compared unaligned (tried again "
                                    f"every {exchange.CLOCK_EVERY_S:g} s)")
            else:
                self.offset_us = dict(self.clocks.offset_us)
                clock.update(applied=True, reason=f"{len(lead)} hosts",
                             offsets_us=dict(self.offset_us),
                             spread_us={followers[r]: s for r, (_, s) in found.items()})
                self._clock_spreads(clock["spread_us"])
        fr = self.agent.fr_info        # what this torch reads (collscope.runtime.flight_recorder)
        self.agent.channel.send(WatchJobRecord(
            time.time(), self.agent.world_size, self.agent.backend,
            [{"rank": h.rank, "host": h.host, "local_rank": h.local_rank, "pid": h.pid}
             for h in sorted(hellos, key=lambda h: h.rank)],
            sorted({h.host for h in hellos}), clock, fr, library_versions()).to_dict())

    def _clock_spreads(self, spread_us: dict[str, float]) -> None:
        """The detector's delays across hosts count only above the alignment's error."""
        self.rounds.detector.clock_ms = {
            rank: spread_us[host] / 1000 for rank, host in self._host_of.items()
            if host in spread_us}

    def host(self, rank: int) -> str:
        hello = self.hellos.get(rank)
        return hello.host if hello else "?"

    def round(self, number: int) -> None:
        clock = self.clocks.poll()
        if clock is not None:
            self.offset_us = dict(self.clocks.offset_us)
            if clock.applied:
                self._clock_spreads(clock.spread_us)
            self.agent.channel.send(clock.to_dict())
        offsets, host_of = self.offset_us, self._host_of
        # The collector paused for the round: what it decodes lives for the round only, and
        # at thousands of ranks the collections it set off (full passes over the job's every
        # object) cost rank 0 a fifth of its CPU at 4,096 ranks (benchmarks/watch_scale.py)
        with gc_paused():
            read = self.source.summaries()
            offset = lambda r: offsets.get(host_of.get(r, ""), 0.0)  # noqa: E731
            changes = self.rounds.take_hosts(read, offset, number) \
                if isinstance(read, HostRead) else self.rounds.take_decoded(read, offset, number)
            now = time.time()
            for change in changes:
                self.agent.channel.send(finding(change, now, self.host, self._local,
                                                self.rounds.detector.members).to_dict())
            self.agent.channel.send_many([record.to_dict() for record in self._windows(now)])
        if not self.collected and self.store.check([exchange.HANG_KEY]):
            self._collect()

    def _windows(self, now: float) -> list[WatchWindowRecord]:
        out = []
        detector = self.rounds.detector
        active = detector.active
        kept: dict[tuple[str, int], float] = {}
        for group in sorted(detector.history):
            window = detector.window(group)
            if not window:
                continue
            # each collective's first arrival, last rank and its wait caused, once (per
            # rank they would cost a pass over every member: N^2 at N ranks)
            firsts = [m.first_us for m in window]
            lasts = [m.last for m in window]
            waits: dict[int, float] = {}
            for m, last in zip(window, lasts):
                waits[last] = waits.get(last, 0.0) + self._wait_caused(m, last, kept)
            for rank in self._window_ranks(sorted(window[-1].arrivals_us), lasts, active):
                summary = self.rounds.summary(rank)
                pending = summary.pending if summary else None
                out.append(WatchWindowRecord(
                    now, rank, self.host(rank), self._local(rank), group, len(window),
                    round(statistics.median((m.arrivals_us[rank] - first) / 1000
                                            for m, first in zip(window, firsts)), 3),
                    lasts.count(rank), round(waits.get(rank, 0.0), 3),
                    dict(summary.completed.get(group, {})) if summary else {},
                    pending.age_s if pending else None,
                    (group, rank) in active,
                    *_bandwidth(summary.timed.get(group) if summary else None)))
        self._turn += WINDOW_RECORDS_PER_ROUND
        self._waits = kept
        return out

    def _wait_caused(self, m: Any, last: int, kept: dict[tuple[str, int], float]) -> float:
        """A window collective's wait caused by its last rank, summed over every member once
        (it stays in the window for rounds; the sum is O(members))."""
        key = (m.group, m.seq)
        wait = self._waits.get(key)
        kept[key] = wait = m.wait_caused_ms(last) if wait is None else wait
        return wait

    def _window_ranks(self, ranks: list[int], lasts: list[int],
                      active: set[tuple[str, int]]) -> list[int]:
        """Every rank while they are few; beyond WINDOW_RECORDS_PER_ROUND a turning slice
        (each rank's record renewed every N / WINDOW_RECORDS_PER_ROUND rounds) plus every
        rank that entered a collective of the window last or is flagged, so the records
        rank 0 writes per round stay bounded whatever the job's size."""
        if len(ranks) <= WINDOW_RECORDS_PER_ROUND:
            return ranks
        start = self._turn % len(ranks)
        chosen = set(ranks[start:start + WINDOW_RECORDS_PER_ROUND])
        chosen.update(ranks[:max(0, start + WINDOW_RECORDS_PER_ROUND - len(ranks))])
        chosen.update(lasts)
        chosen.update(rank for _, rank in active)
        return sorted(chosen.intersection(ranks))

    def _local(self, rank: int) -> int | None:
        hello = self.hellos.get(rank)
        return hello.local_rank if hello else None

    def _collect(self) -> None:
        """Every rank was told (the hang key); wait for their dumps, name the silent ones."""
        self.collected = True
        info = json.loads(self.store.get(exchange.HANG_KEY))
        # Rank 0's own dump first: its tick may have looked at the hang key just before it
        # was set, and this thread, which waits below, is the one that would write it.
        self.agent.dump_once()
        ranks = list(range(self.agent.world_size))
        answered = self.source.dumped(ranks, DUMP_DEADLINE_S)
        silent = [r for r in ranks if r not in answered]
        folder = self.agent.settings.dump_dir
        if silent:
            dumps.write_no_answer(folder, silent, DUMP_DEADLINE_S)
        self.agent.channel.send(StallRecord(
            time.time(), int(info["rank"]), str(info["group"]), str(info["collective"]),
            int(info["seq"]), float(info["pending_s"]), folder, answered, silent).to_dict())
