"""The Flight Recorder reader on real gloo dumps (tests/fixtures/own/watch) and the summary a
rank publishes from it: entries handed over once, the pending one found, lost entries counted,
and a few hundred bytes per interval that decode to what went in."""

from __future__ import annotations

import json

from collscope.parsers.flight_recorder import FlightEntry
from collscope.watch.flight import FlightReader
from collscope.watch.summary import MAX_PER_GROUP, Counter, Summary, summarise
from tests.conftest import fixture_path


def _dumps(*names: str) -> list[bytes]:
    return [fixture_path("own", "watch", name).read_bytes() for name in names]


def test_reader_hands_each_entry_over_once_and_finds_the_pending_one():
    feed = iter(_dumps("fr_gloo_done.json", "fr_gloo_pending.json"))
    reader = FlightReader(lambda: next(feed))
    first = reader.read()
    assert [(e.group, e.collective_seq_id, e.op) for e in first.new] == \
        [("0", s, "all_reduce") for s in range(1, 6)] + [("0", 6, "broadcast"),
                                                         ("1", 1, "all_reduce")]
    assert first.oldest_pending is None and first.pending_ids == set()
    second = reader.read()
    assert [(e.record_id, e.collective_seq_id) for e in second.new] == [(7, 7)]
    assert second.oldest_pending is not None and second.oldest_pending.collective_seq_id == 7
    assert second.pending_ids == {7} and second.lost == 0


def test_entries_the_ring_overwrote_between_reads_are_counted_lost():
    done, pending = (json.loads(d) for d in _dumps("fr_gloo_done.json",
                                                   "fr_gloo_pending.json"))
    pending["entries"] = pending["entries"][-1:]         # the ring kept only the newest
    feed = iter([json.dumps({"entries": done["entries"][:2]}).encode(),
                 json.dumps(pending).encode()])
    reader = FlightReader(lambda: next(feed))
    reader.read()
    assert reader.read().lost == 5                       # record ids 2..6 never seen


def test_summary_round_trips_and_stays_small():
    reader = FlightReader(lambda: _dumps("fr_gloo_pending.json")[0])
    read = reader.read()
    counter = Counter()
    counter.update(read.new, read.pending_ids)
    summary = summarise(3, 1796160000.0 + 1.0, read.new, read.oldest_pending, counter.counts)
    text = summary.encode()
    back = Summary.decode(text)
    assert back.arrivals == summary.arrivals and back.completed == {
        "0": {"all_reduce": 5, "broadcast": 1}, "1": {"all_reduce": 1}}
    assert back.pending is not None and (back.pending.group, back.pending.seq) == ("0", 7)
    assert len(text) < 300


def test_a_busy_interval_keeps_the_newest_entries_per_group():
    entries = [FlightEntry(record_id=seq, pg_id=0, process_group=("0", "default_pg"),
                           collective_seq_id=seq, p2p_seq_id=0, op_id=seq,
                           profiling_name="nccl:all_reduce", state="completed", retired=True,
                           time_created_ns=(10**9 + seq * 40_000) * 1000)
               for seq in range(1, 200)]
    summary = summarise(1, 2000.0, entries, None, {})
    assert [seq for seq, _ in summary.arrivals["0"]] == list(range(200 - MAX_PER_GROUP, 200))
    text = summary.encode()
    assert len(text) < 600 and Summary.decode(text).arrivals == summary.arrivals
