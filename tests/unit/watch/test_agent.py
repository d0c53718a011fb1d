"""One rank's agent driven round by round on a real in-process store (torch's HashStore) and
real gloo FR dumps (tests/fixtures/own/watch): what it tells the wrapper when the ring
overflowed between reads, and the cost it reports as it ends."""

from __future__ import annotations

import json

from collscope.watch.agent import Agent, Channel
from collscope.watch.config import AgentSettings
from collscope.watch.exchange import FlatLink
from collscope.watch.flight import FlightReader
from tests.conftest import fixture_path


def _agent(tmp_path, feed) -> Agent:
    import torch.distributed as dist

    agent = Agent(1, 2, "gloo", dist.HashStore(),
                  AgentSettings(interval_s=1.0, dump_dir=str(tmp_path / "dumps")),
                  Channel(str(tmp_path), 1))
    agent.store = agent._default_store
    agent.link = FlatLink(agent.store, agent.hello, 2, lambda: False)
    agent.reader = FlightReader(lambda: next(feed))
    return agent


def _sent(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "rank1.jsonl").read_text().splitlines()]


def test_an_overflowing_ring_is_said_once_with_what_to_change(tmp_path):
    done, pending = (json.loads(fixture_path("own", "watch", name).read_bytes())
                     for name in ("fr_gloo_done.json", "fr_gloo_pending.json"))
    later = {"entries": pending["entries"][-1:]}        # the ring kept only the newest
    feed = iter([json.dumps({"entries": done["entries"][:2]}).encode(),
                 json.dumps(later).encode(), json.dumps(later).encode()])
    agent = _agent(tmp_path, feed)
    for _ in range(3):
        agent._tick()
    (notice,) = [r for r in _sent(tmp_path) if r["kind"] == "watch_notice"]
    assert notice["about"] == "fr_overflow" and notice["rank"] == 1
    assert "overwrote 5 entries between two reads (1 entries kept" in notice["title"]
    assert "TORCH_FR_BUFFER_SIZE" in notice["title"]
    # The recorded pending all_reduce is years older than --hang-after: the agent flagged the
    # stall in the store and wrote its dump where the settings say, once.
    assert [r["kind"] for r in _sent(tmp_path)].count("watch_dumped") == 1
    assert sorted(p.name for p in (tmp_path / "dumps").iterdir()) == ["fr_trace_rank_1",
                                                                      "stack_rank_1.json"]
    agent._send_cost(0.01, 0.02, 4.0)
    cost = _sent(tmp_path)[-1]
    assert cost["kind"] == "watch_agent" and cost["lost_entries"] == 5
    assert cost["cpu_share"] == 0.005 and cost["ticks"] == 3
    assert 0 < cost["read_cpu_s"] < 1


def test_every_agent_ticks_on_one_wall_clock_grid():
    from collscope.watch.agent import next_tick_s

    for now in (1796170889.4277544, 1796170890.0, 1796170890.999):
        for interval in (1.0, 2.0, 0.5):
            wait = next_tick_s(now, interval)
            assert 0 < wait <= interval
            assert abs(round((now + wait) / interval) * interval - (now + wait)) < 1e-6
