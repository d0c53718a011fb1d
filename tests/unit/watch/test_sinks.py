"""Prometheus text and the live line from window records."""

from __future__ import annotations

from collscope.records.watch import WatchWindowRecord
from collscope.watch.sinks import Metrics, live_line


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


def test_live_line_names_the_latest_rank_and_the_stragglers():
    line = live_line([_window(0, 0.2), _window(3, 30.5, True)], 12.5, ["rank 3 (node-1)"])
    assert line == ("watch: 2 ranks, 12.5 collectives/s (rank 0), latest rank 3 (node-1) "
                    "+30.5 ms median in group 0, stragglers: rank 3 (node-1)")
