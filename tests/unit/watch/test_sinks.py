"""Prometheus text and the live line from window records (busbw: checked with promtool where
it is installed)."""

from __future__ import annotations

import shutil
import subprocess

from collscope.records.watch import WatchWindowRecord
from collscope.watch.sinks import Metrics, live_line, straggler_text


def _window(rank: int, lateness_ms: float, straggler: bool = False) -> dict:
    return WatchWindowRecord(1.0, rank, f"node-{rank // 2}", rank % 2, "0", 12, lateness_ms,
                             12 if straggler else 0, 360.0 if straggler else 0.0,
                             {"all_reduce": 40 + rank, "broadcast": 1}, None,
                             straggler).to_dict()


def test_metrics_hold_one_series_per_rank_with_its_labels():
    metrics = Metrics()
    assert metrics.render() == ""
    for rank in range(4):
        metrics.update(_window(rank, 30.5 if rank == 3 else 0.4, straggler=rank == 3))
    metrics.update(_window(1, 0.6))                       # newer window replaces the older
    text = metrics.render()
    assert "# TYPE collscope_watch_collectives_total counter" in text
    assert ('collscope_watch_collectives_total{rank="2",host="node-1",group="0",'
            'collective="all_reduce"} 42') in text
    assert 'collscope_watch_lateness_seconds{rank="3",host="node-1",group="0"} 0.0305' in text
    assert 'collscope_watch_lateness_seconds{rank="1",host="node-0",group="0"} 0.0006' in text
    assert 'collscope_watch_straggler{rank="3",host="node-1",group="0"} 1' in text
    assert 'collscope_watch_oldest_pending_seconds{rank="0",host="node-0"} 0' in text
    assert text.count("collscope_watch_lateness_seconds{") == 4


def test_a_pair_is_said_as_a_pair_with_its_link_and_cost():
    pair = {"rank": 4, "ranks": [4, 5], "shape": "pair", "link": "7", "host": "node-0",
            "cost_pct": 12.04, "p_last": 3e-9}
    assert straggler_text(pair) == ("pair of ranks 4, 5 (group 7), 12.0 % of the job's time "
                                    "(binomial p=3e-09)")
    # a finding written before shapes and costs existed still reads
    assert straggler_text({"rank": 2, "host": "vm"}) == "rank 2 (vm)"


def test_live_line_names_the_latest_rank_and_the_stragglers():
    line = live_line([_window(0, 0.2), _window(3, 30.5, True)], 12.5, ["rank 3 (node-1)"])
    assert line == ("watch: 2 ranks, 12.5 collectives/s (rank 0), latest rank 3 (node-1) "
                    "+30.5 ms median in group 0, stragglers: rank 3 (node-1)")


def _timed(rank: int, group: str, busbw: dict[str, float] | None) -> dict:
    window = _window(rank, 0.4)
    window.update(group=group, group_size=4 if busbw else None,
                  timed_calls={op: 3 for op in busbw} if busbw else None,
                  algbw_gbs={op: v / 1.5 for op, v in busbw.items()} if busbw else None,
                  busbw_gbs=busbw)
    return window


def test_busbw_is_a_gauge_per_collective_that_keeps_its_latest_value():
    metrics = Metrics()
    metrics.update(_timed(0, "0", {"all_reduce": 180.25, "all_gather": 90.5}))
    metrics.update(_timed(1, "0", {"all_reduce": 120.0}))
    metrics.update(_timed(1, "0", None))       # an interval without timed calls keeps 120
    metrics.update(_timed(2, "0", None))       # no durations at all: no series, never a 0
    text = metrics.render()
    assert "# TYPE collscope_watch_busbw_gbps gauge" in text
    assert ('collscope_watch_busbw_gbps{rank="0",host="node-0",group="0",'
            'collective="all_reduce"} 180.25') in text
    assert ('collscope_watch_busbw_gbps{rank="1",host="node-0",group="0",'
            'collective="all_reduce"} 120') in text
    assert text.count("collscope_watch_busbw_gbps{") == 3
    promtool = shutil.which("promtool")
    if promtool is not None:
        check = subprocess.run([promtool, "check", "metrics"], input=text, text=True,
                               capture_output=True, timeout=30)
        assert check.returncode == 0 and check.stdout + check.stderr == "", check.stdout


def test_live_line_names_the_lowest_ranks_busbw_per_collective_when_known():
    metrics = Metrics()
    for rank, value in ((0, 180.25), (1, 120.0), (3, 175.0)):
        metrics.update(_timed(rank, "0", {"all_reduce": value}))
    metrics.update(_timed(2, "7", {"all_gather": 90.5}))
    line = live_line([_window(0, 0.2)], None, [], metrics.busbw())
    assert line.endswith(", stragglers: none, lowest busbw: all_gather 90.5 GB/s rank 2 "
                         "(node-1) group 7, all_reduce 120.0 GB/s rank 1 (node-0) group 0")
    assert "busbw" not in live_line([_window(0, 0.2)], None, [], Metrics().busbw())
