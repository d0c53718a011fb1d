"""Rank 0's agent: joins every rank's summary, runs the detectors, and sends the records.

Each round it reads all ranks' latest summaries in one ``multi_get``, matches collectives by
(group, seq) on aligned clocks, feeds the sliding windows, and sends a ``watch_window``
record per rank and group, a ``finding`` per straggler that starts or ends, and, when a stall
was flagged, collects the dumps (waiting at most DUMP_DEADLINE_S) and sends ``watch_stall``.
"""

from __future__ import annotations

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
from collscope.watch.summary import Summary

DUMP_DEADLINE_S = 8.0


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


class Aggregator:
    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.store = agent.store
        self.hellos: dict[int, exchange.Hello] = {}
        self.offset_us: dict[str, float] = {}
        self.matcher = detect.Matcher(range(agent.world_size))
        self.detector = detect.Detector()
        self.summaries: dict[int, Summary] = {}
        self.collected = False
        self.clocks = Clocks(None, lambda: None, {}, lambda: True)   # begin() makes the real one

    def begin(self, hellos: list[exchange.Hello]) -> None:
        self.hellos = {h.rank: h for h in hellos}
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
        fr = self.agent.fr_info        # what this torch reads (collscope.runtime.flight_recorder)
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
        ranks = sorted(self.hellos)
        texts = self.store.multi_get([exchange.summary_key(r) for r in ranks]) if ranks else []
        for rank, text in zip(ranks, texts):
            summary = Summary.decode(text)
            self.summaries[rank] = summary
            self.matcher.add(rank, summary.arrivals, self.offset_us.get(self.host(rank), 0.0),
                             number)
        self.detector.feed(self.matcher.close(number))
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
            for rank in sorted(window[-1].arrivals_us) if window else []:
                summary = self.summaries.get(rank)
                pending = summary.pending if summary else None
                out.append(WatchWindowRecord(
                    now, rank, self.host(rank), self._local(rank), group, len(window),
                    round(statistics.median(m.lateness_ms(rank) for m in window), 3),
                    sum(m.last == rank for m in window),
                    round(sum(m.wait_caused_ms(rank) for m in window), 3),
                    dict(summary.completed.get(group, {})) if summary else {},
                    pending.age_s if pending else None,
                    (group, rank) in self.detector.active,
                    *_bandwidth(summary.timed.get(group) if summary else None)))
        return out

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
        keys = [exchange.dumped_key(r) for r in ranks]
        end = time.monotonic() + DUMP_DEADLINE_S
        while not self.store.check(keys) and time.monotonic() < end:
            time.sleep(exchange.POLL_S)
        answered = [r for r, ok in zip(ranks, exchange.present(self.store, keys)) if ok]
        silent = [r for r in ranks if r not in answered]
        folder = self.agent.settings.dump_dir
        if silent:
            dumps.write_no_answer(folder, silent, DUMP_DEADLINE_S)
        self.agent.channel.send(StallRecord(
            time.time(), int(info["rank"]), str(info["group"]), str(info["collective"]),
            int(info["seq"]), float(info["pending_s"]), folder, answered, silent).to_dict())
