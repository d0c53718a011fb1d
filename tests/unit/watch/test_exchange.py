"""The store exchange on real c10d stores in one process (HashStore; TCPStore where the agents
open their own connections): keys under the job's prefix, the clock exchange between rank 0
and another host's first rank (one clock here: the offset is ~0 and within the spread it
reports; a follower's clock set ahead is measured so), its re-run every minute as a numbered
epoch while the rounds go on, and host leaders."""

from __future__ import annotations

import json
import threading
import time

import pytest

from collscope.watch import exchange
from collscope.watch.exchange import Hello


@pytest.mark.serial   # bounds a wall time
def test_clock_exchange_on_one_clock_finds_no_offset():
    dist = pytest.importorskip("torch.distributed")
    store = exchange.connect(dist.HashStore(), "collscope/watch/test/0/")
    follower = threading.Thread(target=exchange.clock_follower, args=(store, 2))
    follower.start()
    found = exchange.clock_master(store, [2])
    follower.join()
    assert found is not None and set(found) == {2}
    offset_us, spread_us = found[2]
    assert abs(offset_us) < 20_000 and spread_us >= 0     # threads on one clock: ~0


@pytest.mark.serial   # bounds a wall time
def test_a_followers_clock_ahead_is_measured_and_each_epochs_keys_removed():
    dist = pytest.importorskip("torch.distributed")
    store = exchange.connect(dist.HashStore(), "collscope/watch/test/0/")
    ahead_ns = 250_000_000
    follower = threading.Thread(target=exchange.clock_follower, args=(
        store, 2, 3, lambda: time.time_ns() + ahead_ns))
    follower.start()
    found = exchange.clock_master(store, [2], epoch=3)
    follower.join()
    assert found is not None
    offset_us, spread_us = found[2]
    assert abs(offset_us - ahead_ns / 1000) < 20_000 and spread_us >= 0
    keys = exchange.master_clock_keys(3) + exchange.follower_clock_keys(3, 2)
    assert all(store.check([k]) for k in keys if not k.startswith("clkready"))
    exchange.drop_clock_keys(store, 3, [2])
    assert not any(store.check([k]) for k in keys)


@pytest.mark.serial   # bounds a wall time
def test_the_clocks_are_aligned_again_while_the_rounds_go_on(tmp_path):
    """Rank 0's agent and another host's first rank (rank 1) on an in-process TCPStore: at
    start rank 1's clock is 250 ms ahead; then it drifts to 300 ms, and the next epoch, run
    on rank 0's clock thread and answered on rank 1's tick, replaces the offset and says
    by how much it moved."""
    dist = pytest.importorskip("torch.distributed")
    from collscope.watch.agent import Agent, Channel
    from collscope.watch.config import AgentSettings
    from collscope.watch.flight import FlightReader

    server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    settings = AgentSettings(interval_s=1.0, dump_dir=str(tmp_path / "dumps"))
    agents = [Agent(rank, 2, "gloo", server, settings, Channel(str(tmp_path), rank))
              for rank in (0, 1)]
    ahead_ns = [250_000_000]
    rank0, rank1 = agents
    rank1.hello = Hello(1, "other-host", None, rank1.hello.pid, "gloo")
    rank1.clock_ns = lambda: time.time_ns() + ahead_ns[0]
    for agent in agents:
        agent.reader = FlightReader(lambda: b"{}")
    joining = threading.Thread(target=rank1._setup)
    joining.start()
    rank0._setup()
    joining.join()
    clocks = rank0.aggregator.clocks
    assert rank1.clock_leader and clocks.followers == {1: "other-host"}
    assert abs(rank0.aggregator.offset_us["other-host"] - 250_000) < 20_000

    ahead_ns[0] = 300_000_000
    clocks.every_s, clocks._next = 3600.0, 0.0          # the next epoch is due now
    rank0._tick()                                        # asks, and stamps on its thread
    assert exchange.clock_requested(rank0.store) == 1
    rank1._tick()                                        # answers on its tick
    deadline = time.monotonic() + 30
    while clocks._thread is not None and time.monotonic() < deadline:
        time.sleep(0.01)
        rank0._tick()
    sent = [json.loads(line) for line in (tmp_path / "rank0.jsonl").read_text().splitlines()]
    (record,) = [r for r in sent if r["kind"] == "watch_clock"]
    assert record["epoch"] == 1 and record["applied"] is True
    assert abs(record["offsets_us"]["other-host"] - 300_000) < 20_000
    assert abs(record["change_us"]["other-host"] - 50_000) < 20_000
    assert rank0.aggregator.offset_us == record["offsets_us"]
    assert rank1.clock_epoch == 1
    assert not any(rank0.store.check([k]) for k in (
        exchange.master_clock_keys(0) + exchange.master_clock_keys(1)
        + exchange.follower_clock_keys(0, 1) + exchange.follower_clock_keys(1, 1)))
    for agent in agents:
        agent._stop.set()
        agent._cleanup()


def test_keys_sit_under_the_run_and_restart():
    assert exchange.prefix({"TORCHELASTIC_RUN_ID": "abc", "TORCHELASTIC_RESTART_COUNT": "2"}) \
        == "collscope/watch/abc/2/"
    assert exchange.prefix({"SLURM_JOB_ID": "77"}) == "collscope/watch/77/0/"


def test_each_host_is_measured_by_its_lowest_rank():
    hellos = [Hello(r, f"node{r // 2}", r % 2, 100 + r, "gloo") for r in (3, 0, 2, 1)]
    assert exchange.leaders(hellos) == {"node0": 0, "node1": 2}
    assert Hello.decode(hellos[0].encode().encode()) == hellos[0]
