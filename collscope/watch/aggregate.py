"""Rank 0's agent: joins every rank's summary, runs the detectors, and sends the records.

Each round it reads all ranks' latest summaries in one ``multi_get``, matches collectives by
(group, seq) on aligned clocks, feeds the sliding windows, and sends a ``watch_window``
record per rank and group, a ``finding`` per straggler that starts or ends, and, when a stall
was flagged, collects the dumps (waiting at most DUMP_DEADLINE_S) and sends ``watch_stall``.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import time
from typing import Any

from collscope.records.watch import StallRecord, StragglerFinding, WatchJobRecord, WatchWindowRecord
from collscope.versions import library_versions
from collscope.watch import detect, dumps, exchange
from collscope.watch.bandwidth import Timed
from collscope.watch.clocks import NO_ANSWER, Clocks
from collscope.watch.flight import BUFFER_ENV
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


class _Settled(detect.Matched):
    """A matched collective whose first arrival and last rank are computed once: its
    arrivals no longer change, and the detector asks for them per rank (N times each)."""

    @functools.cached_property
    def first_us(self) -> float:
        return min(self.arrivals_us.values())

    @functools.cached_property
    def last(self) -> int:
        return max(self.arrivals_us, key=lambda r: (self.arrivals_us[r], r))


def _clock(unix_s: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(unix_s))


class Aggregator:
    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.store = agent.store
        self.hellos: dict[int, exchange.Hello] = {}
        self.offset_us: dict[str, float] = {}
        self.matcher = detect.Matcher(range(agent.world_size))
        self.detector = detect.Detector()
        self.summaries: dict[int, Summary] = {}
        self.source: Any = None
        self._turn = 0
        self.collected = False
        self.clocks = Clocks(None, lambda: None, {}, lambda: True)   # begin() makes the real one

    def begin(self, hellos: list[exchange.Hello], source: Any = None) -> None:
        """``source``: where the summaries come from (exchange.FlatSource, the default, or
        levels.HostRecords); the matcher gets the same summaries from either."""
        self.hellos = {h.rank: h for h in hellos}
        self.source = source or exchange.FlatSource(self.store, sorted(self.hellos))
        self.matcher = detect.Matcher(sorted(self.hellos))
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
        variable = next((n for n in BUFFER_ENV if os.environ.get(n)), None)
        fr = {"variable": variable, "entries": os.environ.get(variable) if variable else None}
        self.agent.channel.send(WatchJobRecord(
            time.time(), self.agent.world_size, self.agent.backend,
            [{"rank": h.rank, "host": h.host, "local_rank": h.local_rank, "pid": h.pid}
             for h in sorted(hellos, key=lambda h: h.rank)],
            sorted({h.host for h in hellos}), clock, fr, library_versions()).to_dict())

    def host(self, rank: int) -> str:
        hello = self.hellos.get(rank)
        return hello.host if hello else "?"

    def round(self, number: int) -> None:
        clock = self.clocks.poll()
        if clock is not None:
            self.offset_us = dict(self.clocks.offset_us)
            self.agent.channel.send(clock.to_dict())
        for rank, summary in self.source.summaries():
            self.summaries[rank] = summary
            self.matcher.add(rank, summary.arrivals, self.offset_us.get(self.host(rank), 0.0),
                             number)
        self.detector.feed(_Settled(m.group, m.seq, m.arrivals_us)
                           for m in self.matcher.close(number))
        now = time.time()
        for change in self.detector.changes():
            self.agent.channel.send(self._finding(change, now).to_dict())
        for record in self._windows(now):
            self.agent.channel.send(record.to_dict())
        if not self.collected and self.store.check([exchange.HANG_KEY]):
            self._collect()

    def _windows(self, now: float) -> list[WatchWindowRecord]:
        out = []
        for group in sorted(self.detector.history):
            window = self.detector.window(group)
            if not window:
                continue
            # each collective's first arrival, last rank and its wait caused, once (per
            # rank they would cost a pass over every member: N^2 at N ranks)
            firsts = [m.first_us for m in window]
            lasts = [m.last for m in window]
            waits = {}
            for m, last in zip(window, lasts):
                waits[last] = waits.get(last, 0.0) + m.wait_caused_ms(last)
            for rank in self._window_ranks(sorted(window[-1].arrivals_us), lasts):
                summary = self.summaries.get(rank)
                pending = summary.pending if summary else None
                out.append(WatchWindowRecord(
                    now, rank, self.host(rank), self._local(rank), group, len(window),
                    round(statistics.median((m.arrivals_us[rank] - first) / 1000
                                            for m, first in zip(window, firsts)), 3),
                    lasts.count(rank), round(waits.get(rank, 0.0), 3),
                    dict(summary.completed.get(group, {})) if summary else {},
                    pending.age_s if pending else None,
                    (group, rank) in self.detector.active,
                    *_bandwidth(summary.timed.get(group) if summary else None)))
        self._turn += WINDOW_RECORDS_PER_ROUND
        return out

    def _window_ranks(self, ranks: list[int], lasts: list[int]) -> list[int]:
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
        chosen.update(rank for _, rank in self.detector.active)
        return sorted(chosen.intersection(ranks))

    def _local(self, rank: int) -> int | None:
        hello = self.hellos.get(rank)
        return hello.local_rank if hello else None

    def _finding(self, change: detect.Change, now: float) -> StragglerFinding:
        v = change.verdict
        where = f"rank {v.rank} ({self.host(v.rank)})"
        if change.state == "started":
            title = (f"straggler: {where} in group {change.group}: median lateness "
                     f"{v.lateness_ms:.1f} ms (was {v.baseline_ms:.1f} ms), entered last "
                     f"{v.hits}/{v.window}, made the others wait {v.wait_caused_ms:.0f} ms "
                     f"over the window; since {_clock(v.since_us / 1e6)}")
        else:
            title = (f"straggler ended: {where} in group {change.group}: median lateness "
                     f"{v.lateness_ms:.1f} ms, entered last {v.hits}/{v.window}")
        test = (f"binomial p={v.p_last:.2g} (Bonferroni x ranks), Mann-Whitney p={v.p_rise:.2g}; "
                + detect.METHOD)
        return StragglerFinding(change.state, now, v.rank, self.host(v.rank), self._local(v.rank),
                                change.group, v.since_us / 1e6, round(v.lateness_ms, 3),
                                round(v.baseline_ms, 3), round(v.wait_caused_ms, 3), v.hits,
                                v.window, v.p_last, v.p_rise, title, test)

    def _collect(self) -> None:
        """Every rank was told (the hang key); wait for their dumps, name the silent ones."""
        self.collected = True
        info = json.loads(self.store.get(exchange.HANG_KEY))
        ranks = list(range(self.agent.world_size))
        answered = self.source.dumped(ranks, DUMP_DEADLINE_S)
        silent = [r for r in ranks if r not in answered]
        folder = self.agent.settings.dump_dir
        if silent:
            dumps.write_no_answer(folder, silent, DUMP_DEADLINE_S)
        self.agent.channel.send(StallRecord(
            time.time(), int(info["rank"]), str(info["group"]), str(info["collective"]),
            int(info["seq"]), float(info["pending_s"]), folder, answered, silent).to_dict())
