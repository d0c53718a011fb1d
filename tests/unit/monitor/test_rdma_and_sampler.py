"""RDMA counters on a fake sysfs tree, and the sampler's schedule, rates and summary."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from collscope.monitor import Sampler
from collscope.monitor.sources import RdmaSource, Reading, rdma_counter_files
from tests.helpers import ManualClock, Scripted


def make_port(root: Path, dev: str, port: str, rcv: int, xmit: int,
              hw: dict[str, int] | None = None) -> None:
    counters = root / dev / "ports" / port / "counters"
    counters.mkdir(parents=True, exist_ok=True)
    (counters / "port_rcv_data").write_text(f"{rcv}\n")
    (counters / "port_xmit_data").write_text(f"{xmit}\n")
    (counters / "port_rcv_packets").write_text(f"{rcv // 1024}\n")
    (counters / "port_xmit_packets").write_text(f"{xmit // 1024}\n")
    (counters / "symbol_error").write_text("0\n")
    if hw is not None:
        hw_dir = root / dev / "ports" / port / "hw_counters"
        hw_dir.mkdir(exist_ok=True)
        for name, value in hw.items():
            (hw_dir / name).write_text(f"{value}\n")


def test_rdma_files_found_and_data_counted_in_4_byte_words(tmp_path):
    make_port(tmp_path, "mlx5_0", "1", 1000, 2000, hw={"out_of_buffer": 3, "lifespan": 10})
    make_port(tmp_path, "mlx5_1", "1", 0, 0)
    names = [name for name, _, _ in rdma_counter_files(tmp_path)]
    assert "rdma.mlx5_0.1.rx_bytes" in names and "rdma.mlx5_1.1.tx_packets" in names
    assert "rdma.mlx5_0.1.hw.out_of_buffer" in names
    assert "rdma.mlx5_0.1.hw.lifespan" not in names      # a setting, not a counter
    reading = RdmaSource(tmp_path).read()
    assert reading.counters["rdma.mlx5_0.1.rx_bytes"] == 4000
    assert reading.counters["rdma.mlx5_0.1.tx_bytes"] == 8000
    assert reading.counters["rdma.mlx5_0.1.rx_packets"] == 0
    assert reading.gauges == {}


def test_rdma_absent_root_reads_nothing(tmp_path):
    assert RdmaSource(tmp_path / "nope").read() == Reading()


def test_rdma_rates_through_sampler_with_a_reset(tmp_path):
    make_port(tmp_path, "mlx5_0", "1", 1000, 1000, hw={"out_of_buffer": 0})
    clock = ManualClock()
    sampler = Sampler(interval=1.0, sources=[RdmaSource(tmp_path)], host="n0",
                      clock=clock, wall_clock=clock)
    sampler.baseline()

    clock.now = 1.0
    make_port(tmp_path, "mlx5_0", "1", 1000 + 250_000_000, 1000 + 500, hw={"out_of_buffer": 6})
    first = sampler.sample_once().metrics
    assert first["rdma.mlx5_0.1.rx_bytes_per_s"] == 1e9       # 250e6 words x 4 B / 1 s
    assert first["rdma.mlx5_0.1.tx_bytes_per_s"] == 2000
    assert first["rdma.mlx5_0.1.hw.out_of_buffer_per_s"] == 6

    clock.now = 2.0   # counters reset (driver reload): the interval gets no rate, not garbage
    make_port(tmp_path, "mlx5_0", "1", 100, 100, hw={"out_of_buffer": 0})
    second = sampler.sample_once().metrics
    assert "rdma.mlx5_0.1.rx_bytes_per_s" not in second
    assert "rdma.mlx5_0.1.tx_bytes_per_s" not in second

    clock.now = 2.5
    make_port(tmp_path, "mlx5_0", "1", 100 + 1000, 100, hw={"out_of_buffer": 0})
    third = sampler.sample_once().metrics
    assert third["rdma.mlx5_0.1.rx_bytes_per_s"] == 8000      # 4000 B over 0.5 s
    assert sampler.bytes_moved["rdma.mlx5_0.1.rx_bytes"] == 1e9 + 4000
    summary = sampler.summary()
    assert summary.metrics["rdma.mlx5_0.1.rx_bytes_per_s"].samples == 2
    assert summary.metrics["rdma.mlx5_0.1.rx_bytes_per_s"].peak == 1e9


def test_rdma_device_that_disappears_is_rediscovered(tmp_path):
    make_port(tmp_path, "mlx5_0", "1", 10, 10)
    source = RdmaSource(tmp_path)
    assert "rdma.mlx5_0.1.rx_bytes" in source.read().counters
    for path in sorted((tmp_path / "mlx5_0").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    make_port(tmp_path, "mlx5_2", "1", 10, 10)
    assert source.read().counters == {}
    assert "rdma.mlx5_2.1.rx_bytes" in source.read().counters


def test_sampler_merges_gauges_and_rates_and_isolates_failing_sources():
    clock = ManualClock()
    good = Scripted("good", [Reading({"cpu.percent": 5.0}, {"net.lo.rx_bytes": 0}),
                             Reading({"cpu.percent": 7.0}, {"net.lo.rx_bytes": 500})])
    bad = Scripted("bad", [RuntimeError("sysfs went away")])
    seen = []
    sampler = Sampler(interval=0.5, sources=[good, bad], sinks=[seen.append], host="n0",
                      clock=clock, wall_clock=lambda: 1000.0 + clock.now)
    sampler.baseline()
    clock.now = 0.5
    record = sampler.sample_once()
    assert record.metrics == {"cpu.percent": 7.0, "net.lo.rx_bytes_per_s": 1000.0}
    assert record.ts == 1000.5 and record.host == "n0" and seen == [record]
    assert sampler.errors == {"bad": "RuntimeError: sysfs went away"}
    sampler.close()
    assert good.closed and bad.closed


@pytest.mark.serial   # bounds a wall time
def test_sampler_thread_schedule_duration_and_final_sample():
    source = Scripted("s", [Reading({"x.value": 1.0})])
    seen = []
    started = time.monotonic()
    sampler = Sampler(interval=0.05, sources=[source], sinks=[seen.append], duration=0.22)
    sampler.start()
    assert sampler.finished.wait(5)
    sampler.stop()
    took = time.monotonic() - started
    # ticks at 0.05 .. 0.20 and the duration's end at 0.22: 5 samples (fewer only if a busy
    # machine made the sampler skip late ticks), none after the duration
    assert 3 <= len(seen) <= 5, [r.ts for r in seen]
    assert 0.2 <= took < 2
    assert abs(sampler.elapsed_s - 0.22) < 0.05


def test_sampler_stop_takes_a_final_sample_and_context_manager():
    seen = []
    with Sampler(interval=10, sources=[Scripted("s", [Reading({"x.value": 2.0})])],
                 sinks=[seen.append]) as sampler:
        time.sleep(0.1)
    assert len(seen) == 1 and seen[0].metrics == {"x.value": 2.0}
    assert sampler.summary().samples == 1


def test_sampler_default_sources_read_this_host():
    with Sampler(interval=0.05) as sampler:
        time.sleep(0.12)
    metrics = sampler.latest.metrics
    assert {"cpu.percent", "mem.used_bytes", "mem.total_bytes"} <= set(metrics)
    assert any(name.startswith("net.") and name.endswith(".rx_bytes_per_s") for name in metrics)
    assert not any(name.startswith("gpu.") for name in metrics)  # no GPU here: absent


def test_sampler_rejects_bad_interval():
    with pytest.raises(ValueError, match="interval"):
        Sampler(interval=0, sources=[])


def test_sink_errors_do_not_stop_sampling():
    def broken(record):
        raise OSError("disk full")

    sampler = Sampler(interval=1, sources=[Scripted("s", [Reading({"x.value": 1.0})])],
                      sinks=[broken])
    sampler.baseline()
    sampler.sample_once()
    assert any("disk full" in text for text in sampler.errors.values())


def test_slow_source_skips_ticks_instead_of_piling_up():
    class Slow(Scripted):
        def read(self) -> Reading:
            time.sleep(0.12)
            return Reading({"x.value": 1.0})

    seen = []
    sampler = Sampler(interval=0.05, sources=[Slow("slow", [Reading()])], sinks=[seen.append])
    sampler.start()
    time.sleep(0.6)
    stop = threading.Thread(target=sampler.stop)
    stop.start()
    stop.join(5)
    assert 2 <= len(seen) <= 6   # ~0.13 s per sample, not one per 0.05 s tick
