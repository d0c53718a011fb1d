"""busbw from the Flight Recorder's durations: FR JSON shaped as NCCL writes it with
TORCH_NCCL_ENABLE_TIMING=1 (tests/fixtures/own/watch/fr_nccl_timed*.json, made from the real
gloo dump with NCCL's fields filled in) read by the real reader, summed per group and
collective, carried through the summary and into rank 0's window records on a real in-process
store; every number checked against nccl-tests' formulas written out by hand."""

from __future__ import annotations

import json

import msgspec
import pytest

from collscope.parsers.flight_recorder import FlightEntry
from collscope.watch import bandwidth, exchange
from collscope.watch.agent import Agent, Channel
from collscope.watch.config import AgentSettings
from collscope.watch.flight import FlightReader
from collscope.watch.summary import Summary, summarise
from tests.conftest import fixture_path

GB = 1e9


def _dump(name: str) -> bytes:
    return fixture_path("own", "watch", name).read_bytes()


def _reader(*names: str) -> FlightReader:
    feed = iter([_dump(n) for n in names])
    return FlightReader(lambda: next(feed))


def test_durations_are_handed_over_once_including_those_that_arrive_after_the_entry():
    reader = _reader("fr_nccl_timed.json", "fr_nccl_timed_later.json", "fr_nccl_timed_later.json")
    first = reader.read()
    # record 9 is in flight (started, no duration yet): it waits; the p2p send is handed over
    # (the tally leaves it out), every other completed entry carries its duration.
    assert [e.record_id for e in first.timed] == list(range(9))
    assert first.group_sizes == {"0": 4, "1": 2}
    second = reader.read()
    # record 9 completed with its duration; record 10 retired without one (never timed).
    assert [(e.record_id, e.duration_ms) for e in second.timed] == [(9, 0.5)]
    assert reader.read().timed == []


def test_gloo_has_no_durations_and_lists_no_group():
    read = _reader("fr_gloo_done.json").read()
    assert read.timed == [] and read.group_sizes == {}
    assert bandwidth.tally(read.new, read.group_sizes) == {}


def test_sizes_are_nccl_tests_sizes_and_rates_their_formulas():
    read = _reader("fr_nccl_timed.json").read()
    tallied = bandwidth.tally(read.timed, read.group_sizes)
    assert sorted(tallied) == ["0", "1"]
    members, ops = tallied["0"]
    assert members == 4
    # Float is 4 bytes, BFloat16 2; all_gather's size is its whole output (the tensor of the
    # base form, the sum of the list form's 4), reduce_scatter's its whole input, alltoall's
    # the larger side; the p2p send is not a collective of nccl-tests' table.
    expected = {
        "broadcast": (1, 256 * 4, 50.0),
        "all_reduce": (2, 1048576 * 4 + 1024 * 2048 * 2, 250.0 + 300.0),
        "all_gather": (2, 1048576 * 2 + 4 * 65536 * 4, 40.0 + 20.0),
        "reduce_scatter": (1, 1048576 * 4, 80.0),
        "alltoall": (1, 2070 * 512 * 2, 100.0),
    }
    # Counts and sizes exact, summed durations to float precision (pytest >= 9.2's approx
    # takes no dictionary of tuples).
    assert {op: (t.calls, t.size_bytes) for op, t in ops.items()} == \
        {op: (calls, size) for op, (calls, size, _) in expected.items()}
    assert {op: t.duration_us for op, t in ops.items()} == \
        pytest.approx({op: us for op, (_, _, us) in expected.items()})
    factors = {"broadcast": 1.0, "all_reduce": 2 * 3 / 4, "all_gather": 3 / 4,
               "reduce_scatter": 3 / 4, "alltoall": 3 / 4}
    for op, (_, size, us) in expected.items():
        algbw, busbw = ops[op].rates(op, members)
        assert algbw == pytest.approx(size / (us * 1e-6) / GB)
        assert busbw == pytest.approx(size / (us * 1e-6) / GB * factors[op])
    assert ops["all_reduce"].rates("all_reduce", 4)[1] == pytest.approx(22.878, abs=1e-3)
    members, ops = tallied["1"]                    # the 2-rank group: 2(n-1)/n = 1
    assert members == 2 and ops["all_reduce"].rates("all_reduce", 2) == pytest.approx(
        (1048576 / 50e-6 / GB, 1048576 / 50e-6 / GB))


def test_names_outside_the_table_unknown_dtypes_and_lone_ranks_are_left_out():
    def entry(name: str, dtype: str = "Float", group: str = "0") -> FlightEntry:
        return msgspec.json.decode(json.dumps(
            {"record_id": 0, "pg_id": 0, "process_group": [group, ""], "collective_seq_id": 1,
             "p2p_seq_id": 0, "op_id": 1, "profiling_name": name, "state": "completed",
             "retired": True, "time_created_ns": 0, "input_sizes": [[8]],
             "input_dtypes": [dtype], "output_sizes": [[8]], "output_dtypes": [dtype],
             "duration_ms": 0.1}), type=FlightEntry)

    sizes = {"0": 4, "1": 1}
    assert bandwidth.tally([entry("nccl:gather"), entry("nccl:coalesced"),
                            entry("nccl:all_reduce", "ComplexFloat"),
                            entry("nccl:all_reduce", group="1")], sizes) == {}
    kept = bandwidth.tally([entry("nccl:_broadcast_oop"), entry("nccl:allreduce_coalesced"),
                            entry("nccl:reduce_scatter_tensor_coalesced", "Half")], sizes)
    assert sorted(kept["0"][1]) == ["all_reduce", "broadcast", "reduce_scatter"]
    assert kept["0"][1]["reduce_scatter"].size_bytes == 8 * 2


def test_the_summary_carries_the_timed_calls_in_a_few_hundred_bytes():
    read = _reader("fr_nccl_timed.json").read()
    tallied = bandwidth.tally(read.timed, read.group_sizes)
    summary = summarise(1, 1796160878.0, read.new, read.oldest_pending, {}, tallied)
    text = summary.encode()
    back = Summary.decode(text)
    assert {g: (n, {op: (t.calls, t.size_bytes, t.duration_us) for op, t in ops.items()})
            for g, (n, ops) in back.timed.items()} == \
        {g: (n, {op: (t.calls, t.size_bytes, t.duration_us) for op, t in ops.items()})
         for g, (n, ops) in tallied.items()}
    assert len(json.dumps(json.loads(text)["w"], separators=(",", ":"))) < 250
    assert len(text) < 500
    assert "w" not in json.loads(summarise(1, 0.0, [], None, {}).encode())


def _records(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "rank0.jsonl").read_text().splitlines()]


def test_rank_zeros_window_records_carry_each_collectives_busbw(tmp_path):
    """Two ranks on one in-process HashStore (rank 1's agent publishes, rank 0's aggregates),
    both reading the same dumps round by round."""
    import os

    import torch.distributed as dist

    store = dist.HashStore()
    # The fixtures' in-flight entry is days old by now: no stall may be declared over it.
    settings = AgentSettings(interval_s=1.0, hang_after_s=1e12,
                             dump_dir=str(tmp_path / "dumps"), aggregate="flat")
    agents = [Agent(rank, 2, "nccl", store, settings, Channel(str(tmp_path), rank))
              for rank in (0, 1)]
    for agent in agents:
        feed = iter([_dump("fr_nccl_timed.json"), _dump("fr_nccl_timed_later.json"),
                     _dump("fr_nccl_timed_later.json")])
        agent.reader = FlightReader(lambda feed=feed: next(feed))
    follower, aggregator = agents[1], agents[0]
    follower.store = exchange.connect(store, exchange.prefix(os.environ))
    follower.store.set(exchange.hello_key(1), follower.hello.encode())
    follower.link = exchange.FlatLink(follower.store, follower.hello, 2, lambda: False)
    aggregator._setup()
    for _ in range(3):
        follower._tick()
        aggregator._tick()
    windows = [r for r in _records(tmp_path) if r["kind"] == "watch_window"
               and r["group"] == "0" and r["rank"] == 1]
    first, second, third = windows
    assert first["group_size"] == 4 and first["timed_calls"] == {
        "all_gather": 2, "all_reduce": 2, "alltoall": 1, "broadcast": 1, "reduce_scatter": 1}
    assert first["busbw_gbs"]["all_reduce"] == pytest.approx(
        (1048576 * 4 + 1024 * 2048 * 2) / 550e-6 / GB * 1.5, abs=1e-3)
    assert first["algbw_gbs"]["alltoall"] == pytest.approx(2070 * 512 * 2 / 100e-6 / GB,
                                                           abs=1e-3)
    # The next interval: only the all_reduce whose duration arrived late.
    assert second["timed_calls"] == {"all_reduce": 1}
    assert second["busbw_gbs"] == {"all_reduce": pytest.approx(1048576 * 4 / 500e-6 / GB * 1.5,
                                                               abs=1e-3)}
    # Nothing new: no bandwidth, never a 0.
    assert third["busbw_gbs"] is None and third["algbw_gbs"] is None
    assert not (tmp_path / "dumps").exists()
