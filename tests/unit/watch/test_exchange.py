"""The store exchange on a real c10d store (HashStore, one process): keys under the job's
prefix, the clock exchange between rank 0 and another host's first rank (one clock here:
the offset is ~0 and within the spread it reports), and host leaders."""

from __future__ import annotations

import threading

import pytest

from collscope.watch import exchange
from collscope.watch.exchange import Hello


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


def test_keys_sit_under_the_run_and_restart():
    assert exchange.prefix({"TORCHELASTIC_RUN_ID": "abc", "TORCHELASTIC_RESTART_COUNT": "2"}) \
        == "collscope/watch/abc/2/"
    assert exchange.prefix({"SLURM_JOB_ID": "77"}) == "collscope/watch/77/0/"


def test_each_host_is_measured_by_its_lowest_rank():
    hellos = [Hello(r, f"node{r // 2}", r % 2, 100 + r, "gloo") for r in (3, 0, 2, 1)]
    assert exchange.leaders(hellos) == {"node0": 0, "node1": 2}
    assert Hello.decode(hellos[0].encode().encode()) == hellos[0]
