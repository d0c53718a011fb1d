"""Pure cores: rates from counters (with resets), flat metric names, output paths, config."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from collscope.errors import UsageError
from collscope.monitor.config import MonitorConfig
from collscope.monitor.rates import RateTracker, rate
from collscope.monitor.run import output_path
from collscope.records.base import read_record
from collscope.records.sample import SampleRecord, split_metric


@pytest.mark.parametrize("previous, current, seconds, expected", [
    (0, 100, 1.0, 100.0),
    (100, 100, 0.5, 0.0),
    (1000, 3000, 0.5, 4000.0),
    (2**64 - 10, 5, 1.0, None),      # wrapped: unknowable, dropped
    (500, 0, 1.0, None),             # reset
    (0, 100, 0.0, None),             # no time passed
    (0, 100, -1.0, None),
])
def test_rate(previous, current, seconds, expected):
    assert rate(previous, current, seconds) == expected


def test_tracker_first_sighting_sets_baseline_and_reset_drops_one_interval():
    tracker = RateTracker()
    assert tracker.update({"net.x.rx_bytes": 100}, 0.0) == {}
    assert tracker.update({"net.x.rx_bytes": 300}, 1.0) == {"net.x.rx_bytes_per_s": 200.0}
    assert tracker.update({"net.x.rx_bytes": 50}, 2.0) == {}          # reset: no rate
    assert tracker.update({"net.x.rx_bytes": 150}, 2.5) == {"net.x.rx_bytes_per_s": 200.0}
    assert tracker.totals == {"net.x.rx_bytes": 300.0}               # 200 + 100, reset adds 0
    # a counter appearing later starts its own baseline
    assert tracker.update({"net.x.rx_bytes": 150, "net.y.rx_bytes": 7}, 3.0) == {
        "net.x.rx_bytes_per_s": 0.0}


@pytest.mark.parametrize("name, family, labels, metric", [
    ("cpu.percent", "cpu", {}, "percent"),
    ("mem.used_bytes", "mem", {}, "used_bytes"),
    ("net.eth0.rx_bytes_per_s", "net", {"iface": "eth0"}, "rx_bytes_per_s"),
    ("net.eth0.100.tx_bytes_per_s", "net", {"iface": "eth0.100"}, "tx_bytes_per_s"),
    ("rdma.mlx5_0.1.rx_bytes_per_s", "rdma", {"device": "mlx5_0", "port": "1"},
     "rx_bytes_per_s"),
    ("rdma.bnxt_re0.1.hw.rx_roce_discards_per_s", "rdma", {"device": "bnxt_re0", "port": "1"},
     "hw.rx_roce_discards_per_s"),
    ("gpu.7.util_percent", "gpu", {"gpu": "7"}, "util_percent"),
    ("proc.cpu_seconds_per_s", "proc", {}, "cpu_seconds_per_s"),
    ("odd.a.b.c", "odd", {"id": "a.b"}, "c"),
])
def test_split_metric(name, family, labels, metric):
    parts = split_metric(name)
    assert (parts.family, parts.labels, parts.metric) == (family, labels, metric)


def test_sample_record_round_trip():
    record = SampleRecord(ts=12.5, host="n0", metrics={"cpu.percent": 3.0})
    assert record.to_dict() == {"kind": "sample", "ts": 12.5, "host": "n0",
                                "metrics": {"cpu.percent": 3.0}}
    assert read_record(SampleRecord, record.to_dict()) == record


def launch(world, local, node):
    return SimpleNamespace(world_size=world, local_world_size=local, node_rank=node)


@pytest.mark.parametrize("path, job, expected", [
    ("m.jsonl", None, "m.jsonl"),
    ("m.jsonl", launch(8, 8, 0), "m.jsonl"),                 # one node: as given
    ("m.jsonl", launch(16, 8, 1), "m.node1.jsonl"),          # several nodes: per node
    ("m.jsonl", launch(16, 8, None), "m.gpu07.jsonl"),       # no node rank: per host
    ("out/{host}-{node}.jsonl", launch(16, 8, 1), "out/gpu07-1.jsonl"),
])
def test_output_path(path, job, expected):
    assert output_path("--json", path, "gpu07", job) == expected


def test_output_path_rejects_unknown_fields():
    with pytest.raises(UsageError, match="{host}"):
        output_path("--json", "m-{rank}.jsonl", "h", None)


@pytest.mark.parametrize("kwargs, flag", [
    ({"interval_s": 0}, "--interval"),
    ({"interval_s": -1}, "--interval"),
    ({"interval_s": float("nan")}, "--interval"),
    ({"duration_s": 0}, "--duration"),
    ({"gpu_backend": "intel"}, "--gpu-backend"),
    ({"prometheus": "http://x"}, "--prometheus"),
    ({"prometheus": "70000"}, "--prometheus"),
])
def test_config_rejects_bad_values_naming_the_flag(kwargs, flag):
    with pytest.raises(UsageError, match=flag):
        MonitorConfig(**kwargs)


def test_config_parses_listen_address_and_strips_separator():
    config = MonitorConfig(prometheus="0.0.0.0:9400", command=["--", "python", "-V"])
    assert config.listen == ("0.0.0.0", 9400)
    assert config.command == ["python", "-V"]
    assert MonitorConfig(prometheus="9400").listen == ("127.0.0.1", 9400)
