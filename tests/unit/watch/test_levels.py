"""The levelled exchange against the flat one, on real c10d stores in one process (the job's
store a HashStore, each host's a TCPStore on 127.0.0.1): 8 ranks on 2 hosts publish the same
summaries round by round (rank 5 turns 30 ms late), and rank 0's aggregator makes the same
findings and window records from either; on a stall both collect the same dumped ranks and
name the same silent one; a host leader that stops is said, its ranks read directly; rank 0
dumps itself before it waits for the ranks."""

from __future__ import annotations

import json
import random
import threading
import time

import pytest

from collscope.watch import exchange, levels
from collscope.watch.agent import Agent, Channel
from collscope.watch.config import AgentSettings
from collscope.watch.exchange import Hello
from collscope.watch.summary import Summary

RANKS, PER_HOST, PER_ROUND, ROUNDS = 8, 4, 4, 26
SLOW_RANK, SLOW_FROM = 5, 60
INTERVAL_S = 0.05


def _hello(rank: int) -> Hello:
    return Hello(rank, f"host{rank // PER_HOST}", rank % PER_HOST, 1000 + rank, "gloo")


def _summaries(round_: int, rng: random.Random) -> dict[int, str]:
    """Every rank's summary of one round: PER_ROUND all_reduces, 50 ms apart, a few ms of
    jitter each; SLOW_RANK 30 ms late from collective SLOW_FROM on."""
    out = {}
    first = (round_ - 1) * PER_ROUND
    for rank in range(RANKS):
        arrivals = []
        for seq in range(first, first + PER_ROUND):
            us = 1_700_000_000_000_000 + seq * 50_000 + int(rng.uniform(0, 2000))
            us += 30_000 if rank == SLOW_RANK and seq >= SLOW_FROM else 0
            arrivals.append((seq, us))
        out[rank] = Summary(round_, time.time(), {"0": arrivals},
                            {"0": {"all_reduce": first + PER_ROUND}}).encode()
    return out


def _joined(make_link, store) -> list:
    """Every rank's link, joined concurrently (as the ranks' agents do)."""
    links = [make_link(store, _hello(r), RANKS, lambda: False) for r in range(RANKS)]
    threads = [threading.Thread(target=link.join, args=(Summary(0, time.time()).encode(), 30))
               for link in links]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return links


def _aggregator(folder, store, links):
    """Rank 0's aggregator on the links' source; host1's leader answers the clock exchange."""
    from collscope.watch.aggregate import Aggregator

    agent = Agent(0, RANKS, "gloo", store, AgentSettings(INTERVAL_S, dump_dir=str(folder)),
                  Channel(str(folder), 0))
    agent.store = store
    aggregator = Aggregator(agent)
    follower = threading.Thread(target=exchange.clock_follower, args=(store, PER_HOST))
    follower.start()
    hellos = sorted((_hello(r) for r in range(RANKS)), key=lambda h: h.rank)
    aggregator.begin(hellos, links[0].source(hellos, agent._notice, INTERVAL_S))
    follower.join()
    aggregator.offset_us = {}     # one clock here; the measured ~0 differs from run to run
    return aggregator


def _run(folder, make_link, store) -> tuple[list[dict], list, object]:
    links = _joined(make_link, exchange.connect(store, "collscope/watch/test/0/"))
    aggregator = _aggregator(folder, links[0].store, links)
    rng = random.Random(7)
    for round_ in range(1, ROUNDS + 1):
        now = time.time()
        for rank, text in _summaries(round_, rng).items():
            links[rank].publish(text, now, INTERVAL_S)
        for link in links:
            link.lead(time.time(), INTERVAL_S)
        aggregator.round(round_)
    records = [json.loads(line) for line in (folder / "rank0.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "time"} for r in records
            if r["kind"] in ("finding", "watch_window")], links, aggregator


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    dist = pytest.importorskip("torch.distributed")
    flat = _run(tmp_path_factory.mktemp("flat"), exchange.FlatLink, dist.HashStore())
    hosts = _run(tmp_path_factory.mktemp("hosts"), levels.HostLink, dist.HashStore())
    return flat, hosts


def test_the_levelled_exchange_gives_the_flat_ones_findings_and_windows(both):
    (flat, _, _), (hosts, links, _) = both
    started = [(r["rank"], r["host"]) for r in hosts if r["kind"] == "finding"]
    assert started == [(SLOW_RANK, "host1")]
    assert hosts == flat
    assert sum(r["kind"] == "watch_window" for r in hosts) >= RANKS * (ROUNDS - 4)
    assert [link.leader for link in links] == [True, False, False, False] * 2


def test_a_host_leader_that_stops_is_said_and_its_ranks_read_directly(both, tmp_path):
    _, (_, links, aggregator) = both
    time.sleep(levels.STALE_INTERVALS * INTERVAL_S + 0.1)    # host1's leader (rank 4) stopped
    rng = random.Random(8)
    for round_ in (ROUNDS + 1, ROUNDS + 2):
        now = time.time()
        for rank, text in _summaries(round_, rng).items():
            if rank != PER_HOST:
                links[rank].publish(text, now, INTERVAL_S)
        links[0].lead(time.time(), INTERVAL_S)
        aggregator.round(round_)
    assert [links[r].direct for r in range(RANKS)] == [False] * 5 + [True] * 3
    folder = aggregator.agent.channel.path
    notices = [r for r in map(json.loads, open(folder).read().splitlines())
               if r["kind"] == "watch_notice"]
    assert [n["about"] for n in notices] == ["leader_stopped"]
    assert notices[0]["title"].startswith("host host1: its leader rank 4 merged nothing for ")
    assert notices[0]["title"].endswith("its ranks are not seen (4): unwatched until it is back")
    assert all(aggregator.rounds.summary(r).round == ROUNDS + 2
               for r in range(RANKS) if r != PER_HOST)


def test_a_stall_collects_the_same_dumped_ranks_by_one_counter(both):
    (_, flat_links, _), (_, host_links, _) = both
    answered = {}
    for name, links in (("flat", flat_links), ("hosts", host_links)):
        store = links[0].store
        store.compare_set(exchange.HANG_KEY, "", json.dumps({"rank": 2}))
        # in rank order, as on one tick: each host's leader (its lowest rank) sees the job's
        # flag first and relays it to its host's store, where the others see it
        for rank, link in enumerate(links):
            assert link.hang_flagged()
            if rank != 6:                                # rank 6 never dumps
                link.mark_dumped()
        for link in links:
            link.lead(time.time(), INTERVAL_S)
        source = links[0].source([], lambda *_: None, INTERVAL_S) if name == "flat" else \
            levels.HostRecords(store, links[0].hosts, lambda *_: None, INTERVAL_S)
        answered[name] = source.dumped(list(range(RANKS)), 0.3)
    assert answered["flat"] == answered["hosts"] == [0, 1, 2, 3, 4, 5, 7]


def test_a_torch_whose_libuv_store_takes_no_socket_gets_the_older_server(monkeypatch):
    """torch <= 2.6 refuses master_listen_fd on its libuv server (NotImplementedError, before
    it touches the socket); the host store is then the older server on the same socket."""
    import torch.distributed as dist

    real, calls = dist.TCPStore, []

    def older_torch(host, port, **options):
        calls.append(dict(options))
        if "master_listen_fd" in options and options.get("use_libuv", True):
            raise NotImplementedError("The libuv TCPStore backend does not support "
                                      "initialization with an listen fd.")
        return real(host, port, **options)

    monkeypatch.setattr(dist, "TCPStore", older_torch)
    server, port = levels.host_store()
    client = levels.connect_host(port)
    client.set("k", "v")
    assert server.get("k") == b"v"
    assert [c.get("use_libuv", True) for c in calls] == [True, False, True]
    assert calls[0]["master_listen_fd"] == calls[1]["master_listen_fd"]


def test_rank_0_dumps_itself_before_it_waits_for_every_rank(tmp_path):
    """The hang key set just after rank 0's tick looked at it: the aggregator, on rank 0's
    agent thread, writes rank 0's dump before it waits for the ranks' (a torch 2.6 gloo job
    named rank 0 beside the stalled rank, 2 runs of 3, when it did not)."""
    dist = pytest.importorskip("torch.distributed")
    links = _joined(exchange.FlatLink, exchange.connect(dist.HashStore(), "collscope/w/t/"))
    aggregator = _aggregator(tmp_path, links[0].store, links)
    aggregator.agent.link = links[0]
    links[0].store.compare_set(exchange.HANG_KEY, "", json.dumps(
        {"rank": 2, "group": "0", "collective": "all_reduce", "seq": 5, "pending_s": 12.0,
         "time": time.time()}))
    for link in links[1:]:
        assert link.hang_flagged()
        link.mark_dumped()
    aggregator.round(1)
    records = [json.loads(line) for line in (tmp_path / "rank0.jsonl").read_text().splitlines()]
    (stall,) = [r for r in records if r["kind"] == "watch_stall"]
    assert stall["answered"] == list(range(RANKS)) and stall["no_answer"] == []
    assert any(p.name.endswith("rank_0.json") or p.name.endswith("rank_0")
               for p in tmp_path.iterdir())
