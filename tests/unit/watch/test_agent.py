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


def test_an_old_nccl_torch_is_read_through_its_own_dump_functions(tmp_path, monkeypatch):
    """torch 2.5-2.7 (stand-in shaped like its torch._C._distributed_c10d): the agent reads
    _dump_nccl_trace_json, dumps _dump_nccl_trace, and says TORCH_NCCL_TRACE_BUFFER_SIZE."""
    from types import SimpleNamespace

    from collscope.runtime import flight_recorder as fr
    from collscope.watch import agent as agent_module

    ring = fixture_path("own", "watch", "fr_gloo_pending.json").read_bytes()
    old = SimpleNamespace(_dump_nccl_trace=lambda: b"old pickle",
                          _dump_nccl_trace_json=lambda **kw: ring)
    monkeypatch.setattr(fr, "_running", lambda: (old, "2.6.0+rocm6.2"))
    for name in fr.BUFFER_VARIABLES:        # set first, so that the test's end restores them
        monkeypatch.setenv(name, "1")
        monkeypatch.delenv(name)
    monkeypatch.setattr(agent_module, "_switched_on", {})
    agent_module.switch_on_flight_recorder()            # as the hook does, before the group
    assert agent_module.os.environ["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "256"
    assert "TORCH_FR_BUFFER_SIZE" not in agent_module.os.environ
    agent = _agent(tmp_path, iter([]))
    agent = Agent(1, 2, "nccl", agent._default_store, agent.settings, agent.channel)
    agent.store = agent._default_store
    agent.link = FlatLink(agent.store, agent.hello, 2, lambda: False)
    assert agent.fr_info == {"variable": "TORCH_NCCL_TRACE_BUFFER_SIZE", "entries": "256",
                             "set_by": "collscope", "ignored": [], "torch": "2.6.0+rocm6.2",
                             "dump": "_dump_nccl_trace_json", "reads": "flight_recorder",
                             "why": ""}
    agent._tick()                      # the fixture's pending collective is long past 180 s
    assert (tmp_path / "dumps" / "fr_trace_rank_1").read_bytes() == b"old pickle"
    # gloo on that torch: no ring; the main thread is watched instead
    gloo = Agent(0, 2, "gloo", agent._default_store, agent.settings, agent.channel)
    assert gloo.fr_info["reads"] == "main_thread" and type(gloo.reader).__name__ == \
        "MainThreadReader"
    assert gloo.fr_info["why"] == ("torch 2.6.0+rocm6.2's Flight Recorder records nccl only, "
                                   "not gloo (gloo from torch 2.8)")


def test_a_buffer_of_zero_is_watched_from_the_main_thread(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_FR_BUFFER_SIZE", "0")
    agent = _agent(tmp_path, iter([]))
    fresh = Agent(1, 2, "gloo", agent._default_store, agent.settings, agent.channel)
    assert fresh.fr_info["reads"] == "main_thread" and fresh.fr_info["set_by"] == "user"
    assert fresh.fr_info["why"] == "TORCH_FR_BUFFER_SIZE=0 keeps no entries"
    fresh.store = fresh._default_store
    fresh.link = FlatLink(fresh.store, fresh.hello, 2, lambda: False)
    fresh._tick()                      # the test's main thread is in no collective
    assert not fresh.dumped
