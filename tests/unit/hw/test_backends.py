"""The AMD and NVIDIA backends on fake amdsmi / pynvml modules shaped like the real ones."""

from __future__ import annotations

import sys

import pytest

from collscope.hw import GpuBackend, detect_backend, make_backend
from collscope.hw.amd import AmdBackend, link_total, number
from collscope.hw.none import NoneBackend
from collscope.hw.nvidia import NvidiaBackend
from collscope.monitor.sources import GpuSource
from tests.unit.hw.fakes import fake_amdsmi, fake_pynvml

MIB = 1024 * 1024


@pytest.fixture
def amdsmi(monkeypatch):
    module = fake_amdsmi()
    monkeypatch.setitem(sys.modules, "amdsmi", module)
    return module


@pytest.fixture
def pynvml(monkeypatch):
    module = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


def test_amd_inventory(amdsmi):
    backend = AmdBackend()
    assert backend.available()
    gpus = backend.inventory()
    assert [g.index for g in gpus] == [0, 1]
    assert gpus[0].name == "AMD Instinct MI300X"
    assert gpus[0].memory_bytes == 196592 * MIB
    assert gpus[1].pci_bus_id == "0000:1c:00.0"
    assert gpus[0].driver_version == "6.8.5"
    backend.close()
    assert amdsmi.state == {"init": 1, "shutdown": 1, "xgmi_scale": 1}


def test_amd_metrics_units_and_fallbacks(amdsmi):
    with AmdBackend() as backend:
        first, second = backend.metrics()
    assert first.util_percent == 90.0 and first.mem_util_percent == 30.0
    assert first.mem_used_bytes == 1024 * MIB and first.mem_total_bytes == 196592 * MIB
    assert first.power_w == 552.0            # current_socket_power; average is N/A on MI300
    assert first.temperature_c == 48.0       # hotspot
    assert first.pcie_bytes_per_s == 12e9    # pcie_bandwidth_inst, GB/s
    assert first.xgmi_read_bytes == sum(range(1000, 8000, 1000)) * 1024  # 7 links, KB
    assert first.xgmi_write_bytes == sum(range(100, 800, 100)) * 1024
    assert first.pcie_rx_bytes_per_s is None and first.nvlink_rx_bytes is None


def test_amd_not_supported_metric_is_absent_not_zero(amdsmi):
    with AmdBackend() as backend:
        second = backend.metrics()[1]   # amdsmi_get_gpu_metrics_info: NOT_SUPPORTED
        reading = GpuSource(backend).read()
    assert second.util_percent == 91.0   # from amdsmi_get_gpu_activity
    assert second.power_w is None and second.temperature_c is None
    assert second.xgmi_read_bytes is None and second.pcie_bytes_per_s is None
    assert "gpu.1.util_percent" in reading.gauges
    assert "gpu.1.power_w" not in reading.gauges
    assert "gpu.1.xgmi_read_bytes" not in reading.counters
    assert reading.gauges["gpu.0.power_w"] == 552.0
    assert "gpu.0.xgmi_read_bytes" in reading.counters


def test_amd_value_helpers():
    assert number("N/A") is None and number(None) is None and number(True) is None
    assert number(0) == 0 and number(3.5) == 3.5
    assert link_total(["N/A", "N/A"], 1024) is None
    assert link_total([1, "N/A", 2], 1024) == 3 * 1024
    assert link_total(7, 1) == 7


def test_amd_missing_library_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "amdsmi", None)   # import amdsmi -> ImportError
    backend = AmdBackend()
    assert not backend.available()
    with pytest.raises(ImportError, match=r"pip install collscope\[amd\]"):
        backend.inventory()


def test_amd_init_failure_is_not_available(monkeypatch):
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi(fail_init=True))
    assert not AmdBackend().available()


def test_nvidia_inventory(pynvml):
    with NvidiaBackend() as backend:
        assert backend.available()
        gpus = backend.inventory()
    assert [g.name for g in gpus] == ["NVIDIA H200", "NVIDIA H200"]
    assert gpus[0].memory_bytes == 150_754_820_096
    assert gpus[1].pci_bus_id == "00000000:19:00.0"
    assert gpus[0].driver_version == "560.35.03"
    assert pynvml.state["shutdown"] == 1


def test_nvidia_metrics_units(pynvml):
    with NvidiaBackend() as backend:
        first, second = backend.metrics()
    assert first.util_percent == 80.0 and first.mem_util_percent == 40.0
    assert first.mem_used_bytes == 2 * 1024**3
    assert first.power_w == 650.0                     # mW -> W
    assert first.temperature_c == 55.0
    assert first.pcie_rx_bytes_per_s == 2000 * 1024   # KB/s -> B/s
    assert first.pcie_tx_bytes_per_s == 1000 * 1024
    assert first.nvlink_rx_bytes == 1000 * 1024       # KiB, all links (scope UINT_MAX)
    assert first.nvlink_tx_bytes == 2000 * 1024
    # GPU 1: no NVLink, PCIe throughput NOT_SUPPORTED -> absent, not 0
    assert second.nvlink_rx_bytes is None and second.pcie_rx_bytes_per_s is None
    assert second.power_w == 650.001


def test_nvidia_not_supported_metrics_are_absent_from_the_reading(pynvml):
    with NvidiaBackend() as backend:
        reading = GpuSource(backend).read()
    assert "gpu.0.pcie_rx_bytes_per_s" in reading.gauges
    assert "gpu.1.pcie_rx_bytes_per_s" not in reading.gauges
    assert "gpu.1.nvlink_rx_bytes" not in reading.counters
    assert reading.counters["gpu.0.nvlink_tx_bytes"] == 2000 * 1024


def test_nvidia_missing_library(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert not NvidiaBackend().available()
    with pytest.raises(ImportError, match=r"pip install collscope\[nvidia\]"):
        NvidiaBackend().metrics()


def test_detect_prefers_amd_then_nvidia_then_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi())
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    assert detect_backend().name == "amd"
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi(gpus=0, metrics_supported=()))
    assert detect_backend().name == "nvidia"
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    backend = detect_backend()
    assert isinstance(backend, NoneBackend) and backend.metrics() == []


def test_detect_closes_backends_it_does_not_pick(monkeypatch):
    empty = fake_amdsmi(gpus=0, metrics_supported=())
    monkeypatch.setitem(sys.modules, "amdsmi", empty)
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    detect_backend()
    assert empty.state["init"] == 1 and empty.state["shutdown"] == 1


def test_detect_takes_extra_candidates():
    class CliBackend(NoneBackend):   # e.g. doctor's amd-smi text fallback
        name = "amd-smi"

    assert detect_backend([lambda: CliBackend()]).name == "amd-smi"


def test_make_backend_names():
    assert all(isinstance(make_backend(n), GpuBackend) for n in ("amd", "nvidia", "none"))
    with pytest.raises(ValueError, match="amd, nvidia, none"):
        make_backend("intel")
