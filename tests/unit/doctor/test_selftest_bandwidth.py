"""selftest.bandwidth: the self-test's busbw against the link it ran over (NVLink, xGMI,
PCIe by generation and width), judged only where a bandwidth means something."""

from __future__ import annotations

import pytest

from collscope.doctor.facts import PciDevice, facts_from
from collscope.doctor.link_bandwidth import pcie_generation, pcie_peak
from collscope.doctor.selftest import SelfTestResult
from collscope.parsers.common import GpuInfo
from tests.helpers import amd_node, findings_of, full_topology, gpu_list


def _selftest(busbw: float, size: int = 256 << 20, backend: str = "nccl") -> SelfTestResult:
    return SelfTestResult("ok", backend=backend, size_bytes=size, busbw_gbs=busbw,
                          time_us=1000.0, wrong=0)


def _h200(busbw: float, **kw):
    return amd_node(vendor="nvidia", gpus=gpu_list(8, "NVIDIA H200"),
                    topology=full_topology(8, "nvlink", 18), selftest=_selftest(busbw, **kw))


@pytest.mark.parametrize(("busbw", "level", "percent"), [(360.0, "ok", "80%"),
                                                         (200.0, "warn", "44%"),
                                                         (90.0, "fail", "20%")])
def test_selftest_busbw_against_nvlink(busbw: float, level: str, percent: str) -> None:
    (finding,) = findings_of(_h200(busbw), "selftest.bandwidth")
    assert finding.level == level and percent in finding.title
    # NV18 on H200: 18 links x 25 GB/s = 450 GB/s one direction
    assert "peak 450 GB/s (NVLink x18 (NVIDIA H200): 18 x 25.0 GB/s)" in finding.detail
    if level != "ok":
        assert "NCCL_P2P_DISABLE" in finding.fix and "LnkSta" in finding.fix


def test_selftest_busbw_against_xgmi_and_pcie() -> None:
    xgmi = amd_node(selftest=_selftest(48.0, backend="rccl"))
    (finding,) = findings_of(xgmi, "selftest.bandwidth")
    assert finding.level == "ok" and "75%" in finding.title            # 48 / 64 GB/s
    pcie_gpus = [GpuInfo(index=i, name="AMD Instinct MI210", pci_bus_id=f"0000:0{i + 3}:00.0")
                 for i in range(2)]
    pci = [PciDevice(address=f"0000:0{i + 3}:00.0", link_speed="16.0 GT/s PCIe", link_width=16)
           for i in range(2)]
    facts = amd_node(gpus=pcie_gpus, pci=pci, topology=full_topology(2, "pcie", 40),
                     selftest=_selftest(6.0, backend="rccl"))
    (finding,) = findings_of(facts, "selftest.bandwidth")
    # gen4 x16 = 16 x 1.969 = 31.5 GB/s; 6 / 31.5 = 19%
    assert finding.level == "fail" and "19%" in finding.title
    assert "PCIe gen4 x16" in finding.detail


def test_selftest_pcie_peak_uses_the_max_link_not_the_idle_one() -> None:
    # An idle GPU's link drops to gen1 (sysfs current_link_speed 2.5 GT/s); max is gen4 x16.
    pcie_gpus = [GpuInfo(index=i, name="AMD Instinct MI210", pci_bus_id=f"0000:0{i + 3}:00.0")
                 for i in range(2)]
    pci = [PciDevice(address=f"0000:0{i + 3}:00.0", link_speed="2.5 GT/s PCIe", link_width=16,
                     max_link_speed="16.0 GT/s PCIe", max_link_width=16) for i in range(2)]
    facts = amd_node(gpus=pcie_gpus, pci=pci, topology=full_topology(2, "pcie", 40),
                     selftest=_selftest(25.0, backend="rccl"))
    (finding,) = findings_of(facts, "selftest.bandwidth")
    # 25 / 31.5 GB/s (gen4 x16) = 79%, not 25 / 3.94 (gen1 x16)
    assert finding.level == "ok" and "79%" in finding.title
    assert ("PCIe gen4 x16: 16 x 1.969 GB/s (the link's max; current gen1 x16, lower while the "
            "GPU idles)") in finding.detail
    # nvidia-smi's pcie.link.*.max from --query-gpu, over a current gen1 x16
    text = ("0, NVIDIA H200, 143771, 1, 0, 570.1, 00000000:18:00.0, GPU-1, 1, 16, 5, 16\n"
            "1, NVIDIA H200, 143771, 1, 0, 570.1, 00000000:2A:00.0, GPU-2, 1, 16, 5, 16\n")
    gpus = facts_from({"nvidia-smi-query-gpu.csv": text}).gpus
    assert gpus[0].extra["pcie.link.gen.max"] == "5"
    nv = amd_node(vendor="nvidia", gpus=gpus, topology=full_topology(2, "pcie", 40),
                  selftest=_selftest(50.0))
    (finding,) = findings_of(nv, "selftest.bandwidth")
    assert "79%" in finding.title and "PCIe gen5 x16" in finding.detail   # 50 / 63.0 GB/s


def test_selftest_bandwidth_judged_only_where_it_means_something() -> None:
    assert findings_of(_h200(10.0, size=1 << 20), "selftest.bandwidth") == []      # latency-bound
    assert findings_of(_h200(0.5, backend="gloo"), "selftest.bandwidth") == []     # CPU
    mystery = amd_node(gpus=gpu_list(2, "Mystery GPU"), topology=full_topology(2, "nvlink", 4),
                       selftest=_selftest(50.0))
    (finding,) = findings_of(mystery, "selftest.bandwidth")
    assert finding.level == "info" and "no link figure" in finding.title


@pytest.mark.parametrize(("speed", "gen"), [("8.0 GT/s PCIe", 3), ("16.0 GT/s PCIe", 4),
                                            ("32.0 GT/s PCIe", 5), ("2.5 GT/s", 1), ("", None)])
def test_pcie_table(speed: str, gen: int | None) -> None:
    assert pcie_generation(speed) == gen
    assert pcie_peak(5, 16).gbs == pytest.approx(63.008)                 # type: ignore[union-attr]
    assert pcie_peak(None, 16) is None
