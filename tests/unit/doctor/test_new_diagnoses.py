"""The diagnoses users ask about in rccl/nccl issue threads: TCP socket fall-back, GPUDirect
RDMA on only some NICs, GPU memory held while idle, self-test bandwidth below the link's."""

from __future__ import annotations

import pytest

from collscope.doctor.checks import explain
from collscope.doctor.facts import PciDevice, facts_from
from collscope.doctor.link_bandwidth import pcie_generation, pcie_peak
from collscope.doctor.selftest import SelfTestResult
from collscope.parsers.common import GpuInfo
from collscope.parsers.nccl_debug import parse_nccl_debug
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.unit.doctor.test_checks import _gpus, _topology, amd_node, cpu_node, of

OWN = OWN_FIXTURES / "tool-outputs"
NEW_RULES = ("nccl.socket-fallback", "nccl.partial-gdr", "gpu.idle-memory",
             "selftest.bandwidth", "tools.unrecognised", "tools.recognised",
             "tools.gpu-tool-failed")


@pytest.mark.parametrize("rule_id", NEW_RULES)
def test_every_new_check_explains_itself(rule_id: str) -> None:
    text = explain(rule_id)
    assert text is not None and len(text.split()) > 40


def _log(name: str, real: bool = False):
    path = fixture_path("tool-outputs", name) if real else OWN / name
    return parse_nccl_debug(path.read_text()).value


# --------------------------------------------------------------------------- sockets

def test_socket_fallback_in_a_multi_node_job_fails_with_the_verbs_library_named() -> None:
    facts = cpu_node(nccl_log=_log("nccl_debug_info_2node_socket_fallback_libibverbs_sample.txt"))
    (finding,) = of(facts, "nccl.socket-fallback")
    assert finding.level == "fail"
    assert finding.title == ("NCCL fell back to TCP sockets (Using network Socket) on a 2-node "
                             "job (trn-a, trn-b)")
    assert "Failed to open libibverbs.so[.1]" in finding.detail
    for needle in ("libibverbs1", "rdma-core", "/dev/infiniband", "--device=/dev/infiniband",
                   "IPC_LOCK", "RDMA device plugin"):
        assert needle in finding.fix


def test_socket_fallback_on_one_node_warns() -> None:
    facts = cpu_node(nccl_log=_log("nccl_debug_info_h800_8gpu_socket_init_excerpt.txt", True))
    (finding,) = of(facts, "nccl.socket-fallback")
    assert finding.level == "warn" and finding.title.endswith("on one node")
    assert "NET/IB : No device found" in finding.detail


def test_no_socket_finding_when_ib_is_used() -> None:
    assert of(cpu_node(nccl_log=_log("nccl_debug_info_2node_ib_gdr_sample.txt")),
              "nccl.socket-fallback") == []


def test_socket_fallback_on_one_host_is_not_hidden_by_another_hosts_ib() -> None:
    # trn-a could not open libibverbs and logged "Using network Socket"; trn-b used IB.
    facts = cpu_node(nccl_log=_log("nccl_debug_info_2node_socket_on_one_host_own.txt"))
    (finding,) = of(facts, "nccl.socket-fallback")
    assert finding.level == "fail"
    assert finding.title == ("NCCL fell back to TCP sockets (Using network Socket) on 1 of 2 "
                             "nodes: trn-a")
    assert "Failed to open libibverbs.so[.1]" in finding.detail
    assert "other nodes (trn-b) use IB" in finding.detail


# --------------------------------------------------------------------------- GPUDirect RDMA

def test_gdr_disabled_hca_is_named_without_channel_lines() -> None:
    # Only "GPU Direct RDMA Enabled/Disabled for HCA" lines, no "via NET/..." channel lines.
    facts = amd_node(nccl_log=_log("rccl_debug_info_1node_gdr_disabled_hca_own.txt"))
    (finding,) = of(facts, "nccl.partial-gdr")
    assert finding.title == ("GPUDirect RDMA on only some NICs: not on mlx5_1 (GPU Direct RDMA "
                             "disabled)")
    assert "Channels via" not in finding.detail
    assert "enabled for mlx5_0 and disabled for mlx5_1" in finding.detail


def test_gdr_on_only_some_nics_names_the_others() -> None:
    facts = amd_node(nccl_log=_log("rccl_debug_info_2node_partial_gdr_sample.txt"))
    (finding,) = of(facts, "nccl.partial-gdr")
    assert finding.level == "warn"
    assert finding.title == "GPUDirect RDMA on only some NICs: not on NET/IB/1 (mlx5_1)"
    assert "NET/IB/0/GDRDMA" in finding.detail
    for needle in ("nvidia-peermem", "dma-buf", "NCCL_NET_GDR_LEVEL", "placement"):
        assert needle in finding.fix


def test_no_gdr_finding_when_every_nic_uses_it() -> None:
    assert of(amd_node(nccl_log=_log("nccl_debug_info_2node_ib_gdr_sample.txt")),
              "nccl.partial-gdr") == []


# --------------------------------------------------------------------------- idle memory

def test_memory_held_while_idle_names_the_gpu_and_the_process() -> None:
    facts = facts_from({"nvidia-smi.txt":
                        (OWN / "nvidia-smi_default_table_own_2gpu_memory_held.txt").read_text()})
    (finding,) = of(facts, "gpu.idle-memory")
    assert finding.level == "warn"
    # 40961 MiB = 40.0 GiB of 143771 MiB = 140 GiB; GPU 1 (1 MiB) is not flagged
    assert finding.title == "GPU memory held while idle: GPU 0: 40 GiB in use of 140 GiB"
    assert "pid 424242 /usr/bin/python3 on GPU 0 (40 GiB)" in finding.detail
    assert "nvidia-smi --query-compute-apps" in finding.fix and "nvidia-smi -r -i N" in \
        finding.fix and "kill PID" in finding.fix


def test_memory_held_with_no_process_is_a_left_over_context() -> None:
    facts = facts_from({"amd-smi.txt": (OWN / "amd-smi_default_table_own_2gpu.txt").read_text()})
    (finding,) = of(facts, "gpu.idle-memory")
    # GPU 0: 50012 MB (49 GiB) at 0%; GPU 1 is busy (97%) with its 60 GB, so it is fine
    assert finding.title == "GPU memory held while idle: GPU 0: 49 GiB in use of 192 GiB"
    assert "a context left by a hung or killed job" in finding.detail
    assert "amd-smi reset -G -g N" in finding.fix and "rocm-smi --showpids" in finding.fix


def test_memory_held_from_monitor_and_from_percentages() -> None:
    facts = facts_from({"amd-smi-monitor.txt": (OWN / "amd-smi_monitor_own_2gpu.txt").read_text()})
    (finding,) = of(facts, "gpu.idle-memory")
    assert finding.title == "GPU memory held while idle: GPU 0: 24 GiB in use of 192 GiB"
    concise = (OWN / "rocm-smi_concise_own_rocm61_2gpu.txt").read_text()
    assert of(facts_from({"rocm-smi.txt": concise}), "gpu.idle-memory") == []  # 37% at 88%
    held = concise.replace("0%    0%", "45%    0%")                          # GPU 1: 45% at 0%
    (finding,) = of(facts_from({"rocm-smi.txt": held}), "gpu.idle-memory")
    assert finding.title == "GPU memory held while idle: GPU 1: 45% in use"


# --------------------------------------------------------------------------- self-test busbw

def _selftest(busbw: float, size: int = 256 << 20, backend: str = "nccl") -> SelfTestResult:
    return SelfTestResult("ok", backend=backend, size_bytes=size, busbw_gbs=busbw,
                          time_us=1000.0, wrong=0)


def _h200(busbw: float, **kw):
    return amd_node(vendor="nvidia", gpus=_gpus(8, "NVIDIA H200"),
                    topology=_topology(8, "nvlink", 18), selftest=_selftest(busbw, **kw))


@pytest.mark.parametrize(("busbw", "level", "percent"), [(360.0, "ok", "80%"),
                                                         (200.0, "warn", "44%"),
                                                         (90.0, "fail", "20%")])
def test_selftest_busbw_against_nvlink(busbw: float, level: str, percent: str) -> None:
    (finding,) = of(_h200(busbw), "selftest.bandwidth")
    assert finding.level == level and percent in finding.title
    # NV18 on H200: 18 links x 25 GB/s = 450 GB/s one direction
    assert "peak 450 GB/s (NVLink x18 (NVIDIA H200): 18 x 25.0 GB/s)" in finding.detail
    if level != "ok":
        assert "NCCL_P2P_DISABLE" in finding.fix and "LnkSta" in finding.fix


def test_selftest_busbw_against_xgmi_and_pcie() -> None:
    (finding,) = of(amd_node(selftest=_selftest(48.0, backend="rccl")), "selftest.bandwidth")
    assert finding.level == "ok" and "75%" in finding.title            # 48 / 64 GB/s
    pcie_gpus = [GpuInfo(index=i, name="AMD Instinct MI210", pci_bus_id=f"0000:0{i + 3}:00.0")
                 for i in range(2)]
    pci = [PciDevice(address=f"0000:0{i + 3}:00.0", link_speed="16.0 GT/s PCIe", link_width=16)
           for i in range(2)]
    facts = amd_node(gpus=pcie_gpus, pci=pci, topology=_topology(2, "pcie", 40),
                     selftest=_selftest(6.0, backend="rccl"))
    (finding,) = of(facts, "selftest.bandwidth")
    # gen4 x16 = 16 x 1.969 = 31.5 GB/s; 6 / 31.5 = 19%
    assert finding.level == "fail" and "19%" in finding.title
    assert "PCIe gen4 x16" in finding.detail


def test_selftest_pcie_peak_uses_the_max_link_not_the_idle_one() -> None:
    # An idle GPU's link drops to gen1 (sysfs current_link_speed 2.5 GT/s); max is gen4 x16.
    pcie_gpus = [GpuInfo(index=i, name="AMD Instinct MI210", pci_bus_id=f"0000:0{i + 3}:00.0")
                 for i in range(2)]
    pci = [PciDevice(address=f"0000:0{i + 3}:00.0", link_speed="2.5 GT/s PCIe", link_width=16,
                     max_link_speed="16.0 GT/s PCIe", max_link_width=16) for i in range(2)]
    facts = amd_node(gpus=pcie_gpus, pci=pci, topology=_topology(2, "pcie", 40),
                     selftest=_selftest(25.0, backend="rccl"))
    (finding,) = of(facts, "selftest.bandwidth")
    # 25 / 31.5 GB/s (gen4 x16) = 79%, not 25 / 3.94 (gen1 x16)
    assert finding.level == "ok" and "79%" in finding.title
    assert ("PCIe gen4 x16: 16 x 1.969 GB/s (the link's max; current gen1 x16, lower while the "
            "GPU idles)") in finding.detail
    # nvidia-smi's pcie.link.*.max from --query-gpu, over a current gen1 x16
    text = ("0, NVIDIA H200, 143771, 1, 0, 570.1, 00000000:18:00.0, GPU-1, 1, 16, 5, 16\n"
            "1, NVIDIA H200, 143771, 1, 0, 570.1, 00000000:2A:00.0, GPU-2, 1, 16, 5, 16\n")
    gpus = facts_from({"nvidia-smi-query-gpu.csv": text}).gpus
    assert gpus[0].extra["pcie.link.gen.max"] == "5"
    nv = amd_node(vendor="nvidia", gpus=gpus, topology=_topology(2, "pcie", 40),
                  selftest=_selftest(50.0))
    (finding,) = of(nv, "selftest.bandwidth")
    assert "79%" in finding.title and "PCIe gen5 x16" in finding.detail   # 50 / 63.0 GB/s


def test_selftest_bandwidth_judged_only_where_it_means_something() -> None:
    assert of(_h200(10.0, size=1 << 20), "selftest.bandwidth") == []      # latency-bound
    assert of(_h200(0.5, backend="gloo"), "selftest.bandwidth") == []     # CPU
    (finding,) = of(amd_node(gpus=_gpus(2, "Mystery GPU"), topology=_topology(2, "nvlink", 4),
                             selftest=_selftest(50.0)), "selftest.bandwidth")
    assert finding.level == "info" and "no link figure" in finding.title


@pytest.mark.parametrize(("speed", "gen"), [("8.0 GT/s PCIe", 3), ("16.0 GT/s PCIe", 4),
                                            ("32.0 GT/s PCIe", 5), ("2.5 GT/s", 1), ("", None)])
def test_pcie_table(speed: str, gen: int | None) -> None:
    assert pcie_generation(speed) == gen
    assert pcie_peak(5, 16).gbs == pytest.approx(63.008)                 # type: ignore[union-attr]
    assert pcie_peak(None, 16) is None


# --------------------------------------------------------------------------- RDMA not captured

def test_rdma_not_captured_is_not_reported_as_no_device() -> None:
    log = (OWN / "rccl_debug_info_1node_gdr_disabled_hca_own.txt").read_text()
    facts = facts_from({"nccl-debug.log": log})            # no sysfs, ibv_devinfo nor ibstat
    assert facts.rdma == [] and facts.rdma_captured is False
    (finding,) = of(facts, "network.rdma-ports")
    assert finding.title == "RDMA devices not captured"
    assert "TCP" not in finding.detail
    assert "The RCCL log names IB NIC(s): mlx5_0:1, mlx5_1:1." in finding.detail
    assert "ibv_devinfo-v.txt" in finding.fix


def test_no_rdma_device_when_sysfs_was_captured() -> None:
    facts = facts_from({"sysfs/sys/class/net/eth0/operstate": "up\n"})
    (finding,) = of(facts, "network.rdma-ports")
    assert facts.rdma_captured and finding.title == "No RDMA device (InfiniBand/RoCE)"


def test_commands_json_with_a_non_list_argv_is_read() -> None:
    facts = facts_from({"commands.json": '{"x.txt": {"argv": true, "status": "ok"}}'})
    assert facts.tools["x.txt"].argv == [] and facts.tools["x.txt"].status == "ok"


def test_partial_gdr_names_the_ib_nic_not_the_socket_nic_of_the_same_index() -> None:
    log = parse_nccl_debug(
        "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>\n"
        "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>\n"
        "h:1:1 [0] NCCL INFO Using network IB\n"
        "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
        "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/1\n").value
    (finding,) = of(amd_node(nccl_log=log), "nccl.partial-gdr")
    assert finding.title == "GPUDirect RDMA on only some NICs: not on NET/IB/1 (mlx5_1)"
