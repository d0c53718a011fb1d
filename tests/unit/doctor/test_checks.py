"""Every doctor rule on hand-built facts: what it flags, at which level, with which fix."""

from __future__ import annotations

import pytest

from collscope.doctor.checks import (
    AREAS,
    RULES,
    Finding,
    exit_code,
    expected_fabric,
    explain,
    human_bytes,
    ranges,
    run_checks,
    sort_findings,
)
from collscope.doctor.facts import (
    AcsBridge,
    AcsInfo,
    Facts,
    Gid,
    HostInfo,
    PciDevice,
    TorchBuild,
)
from collscope.doctor.probes import ToolRun
from collscope.doctor.selftest import SelfTestResult
from collscope.parsers.common import GpuInfo
from collscope.parsers.nccl_debug import NcclDebugSummary
from collscope.parsers.ucx_info import UcxDevices, UcxMemoryDomain, UcxVersion
from tests.helpers import (
    amd_node,
    cpu_node,
    findings_of,
    full_topology,
    gpu_list,
    levels_of,
    net_interfaces,
    rdma_devices,
)

# --------------------------------------------------------------------------- registry


def test_every_rule_has_an_area_and_an_explanation():
    assert len(RULES) >= 24
    for entry in RULES.values():
        assert entry.area in AREAS
        assert len(entry.explanation.split()) > 40, entry.id     # says why, not just what
        assert explain(entry.id).startswith(entry.id)
    assert explain("no.such.rule") is None


def test_findings_sorted_worst_area_first_and_exit_code():
    findings = [Finding("a", "ok", "gpu", "x"), Finding("b", "info", "host", "y"),
                Finding("c", "warn", "env", "z"), Finding("d", "fail", "network", "w"),
                Finding("e", "ok", "network", "v")]
    ordered = sort_findings(findings)
    assert [f.id for f in ordered] == ["d", "e", "c", "a", "b"]
    assert exit_code(ordered) == 1 and exit_code(ordered[1:]) == 0


def test_healthy_amd_node_has_no_warning():
    findings = run_checks(amd_node(selftest=SelfTestResult("ok", time_us=90.0, busbw_gbs=20.0)))
    assert [f for f in findings if f.level in ("warn", "fail")] == []


def test_formatting_helpers():
    assert ranges([0, 1, 2, 3, 6, 8, 9]) == "0-3,6,8-9" and ranges([]) == ""
    assert human_bytes(192 << 30) == "192 GiB" and human_bytes(None) == "unknown"
    assert human_bytes(1536) == "1.5 KiB"


# --------------------------------------------------------------------------- GPUs, torch


def test_no_gpu_says_gloo_on_cpu():
    (finding,) = findings_of(cpu_node(), "gpu.inventory")
    assert finding.level == "info" and "No GPU" in finding.title and "gloo" in finding.title


def test_gpus_on_pci_but_invisible_is_a_warning():
    facts = cpu_node(pci=[PciDevice("0000:0c:00.0", "0x120000", "0x1002", 0)])
    (finding,) = findings_of(facts, "gpu.inventory")
    assert finding.level == "warn" and "0000:0c:00.0" in finding.detail


def test_gpu_inventory_and_mixed_models():
    (ok,) = findings_of(amd_node(), "gpu.inventory")
    assert ok.level == "ok" and "8 x AMD Instinct MI300X" in ok.title
    assert "192 GiB" in ok.detail and "6.8.5" in ok.detail and "ROCm 6.3.1" in ok.detail
    assert "memory 192 GiB each;" in ok.detail
    mixed = amd_node(gpus=gpu_list(4) + gpu_list(4, "AMD Instinct MI250X"))
    assert levels_of(mixed, "gpu.inventory") == ["warn", "ok"]      # worst first
    # a capture that gives the memory of some GPUs only does not say "each"
    partial = amd_node(gpus=gpu_list(1) + [GpuInfo(index=i) for i in range(1, 8)])
    (ok,) = findings_of(partial, "gpu.inventory")
    assert "memory 192 GiB (1 of 8 GPUs report it);" in ok.detail


def test_torch_sees_fewer_gpus_points_at_visible_devices():
    facts = amd_node(env={"HIP_VISIBLE_DEVICES": "0,1"})
    facts.torch.gpu_count = 2
    (finding,) = findings_of(facts, "gpu.torch-visible")
    assert finding.level == "warn" and "HIP_VISIBLE_DEVICES=0,1" in finding.title
    assert "unset HIP_VISIBLE_DEVICES" in finding.fix
    facts.env = {}
    (finding,) = findings_of(facts, "gpu.torch-visible")
    assert finding.level == "fail" and "/dev/kfd" in finding.fix
    assert levels_of(amd_node(), "gpu.torch-visible") == ["ok"]


def test_torch_build():
    assert levels_of(amd_node(), "torch.build") == ["ok"]
    cpu_torch_on_amd = amd_node(torch=TorchBuild(version="2.13.0+cpu", backends=["gloo"]))
    (finding,) = findings_of(cpu_torch_on_amd, "torch.build")
    assert finding.level == "fail" and "rocm" in finding.fix
    assert findings_of(cpu_torch_on_amd, "gpu.torch-visible") == []    # said once, by torch.build
    assert levels_of(cpu_node(torch=TorchBuild(error="import torch failed: x")),
                  "torch.build") == ["fail"]
    assert levels_of(cpu_node(torch=None), "torch.build") == ["info"]
    (cpu,) = findings_of(cpu_node(), "torch.build")
    assert "CPU-only" in cpu.title and "gloo" in cpu.detail


# --------------------------------------------------------------------------- topology


def test_topology_links_summary():
    (finding,) = findings_of(amd_node(), "topology.links")
    assert finding.title == "8 GPUs: 28 pair(s) xgmi (weight 15)"
    assert levels_of(amd_node(topology=None), "topology.links") == ["info"]


@pytest.mark.parametrize("platform, fabric", [
    ("AMD Instinct MI300X", "xgmi"), ("MI308X", "xgmi"), ("AMD Instinct MI250X", "xgmi"),
    ("AMD Instinct MI325X", "xgmi"), ("NVIDIA H100 80GB HBM3", "nvlink"),
    ("NVIDIA H200", "nvlink"), ("NVIDIA A100-SXM4-80GB", "nvlink"),
    ("NVIDIA H100 PCIe", None), ("NVIDIA A100-PCIE-40GB", None), ("NVIDIA H100 NVL", None),
    ("Tesla T4", None), ("Arcturus GL-XL [Instinct MI100]", None), ("", None),
])
def test_expected_fabric(platform, fabric):
    assert expected_fabric(platform) == fabric


def test_pcie_pairs_on_an_xgmi_platform_warn():
    assert levels_of(amd_node(), "topology.fabric") == ["ok"]
    facts = amd_node(topology=full_topology(8, slow=((0, 5), (3, 7))))
    (finding,) = findings_of(facts, "topology.fabric")
    assert finding.level == "warn" and "2 of 28" in finding.title
    assert "0-5 (pcie)" in finding.detail and "amd-smi xgmi" in finding.fix
    t4 = Facts(vendor="nvidia", gpus=gpu_list(4, "Tesla T4"), topology=full_topology(4, "phb"))
    assert levels_of(t4, "topology.fabric") == ["info"]


def test_numa_placement_of_gpus_and_nics():
    facts = amd_node(gpus=gpu_list(8, numa=[0, 0, 0, 0, 1, 1, 1, 1]))
    for dev in facts.rdma:
        dev.numa_node = 0
    found = findings_of(facts, "topology.numa")
    assert [f.level for f in found] == ["warn", "info"]
    assert "GPU 4-7" in found[0].title
    assert "node 0: GPU 0-3; node 1: GPU 4-7" in found[1].detail
    facts.rdma[1].numa_node = 1
    assert levels_of(facts, "topology.numa") == ["info"]
    nvidia = Facts(vendor="nvidia", gpus=gpu_list(2, "NVIDIA H200", numa=[0, 1]),
                   gpu_nic_link={0: "pix", 1: "sys"})
    assert "GPU 1" in findings_of(nvidia, "topology.numa")[0].title


# --------------------------------------------------------------------------- host


def test_numa_balancing():
    assert levels_of(amd_node(), "host.numa-balancing") == ["ok"]
    on = amd_node(host=HostInfo(numa_balancing=1))
    (finding,) = findings_of(on, "host.numa-balancing")
    assert finding.level == "warn" and "kernel.numa_balancing=0" in finding.fix
    assert levels_of(cpu_node(host=HostInfo(numa_balancing=1)), "host.numa-balancing") == ["info"]


def test_iommu_mode():
    assert levels_of(amd_node(), "host.iommu") == ["ok"]
    translated = amd_node(host=HostInfo(cmdline="BOOT_IMAGE=/vmlinuz ro", iommu_groups=40,
                                        cpu_vendor="GenuineIntel"))
    (finding,) = findings_of(translated, "host.iommu")
    assert finding.level == "warn" and "intel_iommu=on iommu=pt" in finding.fix
    assert levels_of(amd_node(host=HostInfo(cmdline="ro iommu=off")), "host.iommu") == ["info"]
    no_groups = amd_node(host=HostInfo(cmdline="ro", iommu_groups=0))
    assert levels_of(no_groups, "host.iommu") == ["info"]
    assert findings_of(cpu_node(host=HostInfo(cmdline="ro")), "host.iommu") == []


def test_pcie_acs():
    bridges = [AcsBridge("0000:80:01.1", "PCI bridge: AMD", "SrcValid+ TransBlk- ReqRedir+ "
                         "CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"),
               AcsBridge("0000:00:01.1", "PCI bridge: AMD", "SrcValid- ReqRedir- CmpltRedir-")]
    (finding,) = findings_of(amd_node(acs=AcsInfo(checked=True, bridges=bridges)), "host.pcie-acs")
    assert finding.level == "warn" and "0000:80:01.1" in finding.detail
    assert "setpci -s 0000:80:01.1 ECAP_ACS+0x6.w=0000" in finding.fix
    assert levels_of(amd_node(acs=AcsInfo(checked=True, bridges=bridges[1:])),
                  "host.pcie-acs") == ["ok"]
    assert levels_of(amd_node(acs=AcsInfo(checked=True, access_denied=True)),
                  "host.pcie-acs") == ["info"]
    assert findings_of(amd_node(), "host.pcie-acs") == []


def test_memlock_limit_for_rdma():
    assert levels_of(amd_node(), "host.memlock") == ["ok"]
    (finding,) = findings_of(amd_node(host=HostInfo(memlock_soft=64 << 20)), "host.memlock")
    assert finding.level == "warn" and "64 MiB" in finding.title and "unlimited" in finding.fix
    assert levels_of(cpu_node(), "host.memlock") == ["info"]


# --------------------------------------------------------------------------- network


def test_interfaces_listed_and_only_loopback_warns():
    (listing,) = findings_of(cpu_node(), "network.interfaces")
    assert listing.level == "info" and "eth0 up" in listing.detail
    assert levels_of(cpu_node(interfaces=net_interfaces("lo:unknown", "eth0:down")),
                  "network.interfaces") == ["warn", "info"]


def test_rdma_ports():
    assert levels_of(cpu_node(), "network.rdma-ports") == ["info"]
    assert levels_of(amd_node(), "network.rdma-ports") == ["info"]
    down = amd_node(rdma=rdma_devices("mlx5_0:1:ACTIVE", "mlx5_1:1:DOWN"))
    (warn, summary) = findings_of(down, "network.rdma-ports")
    assert warn.level == "warn" and "mlx5_1:1" in warn.detail and "^=mlx5_1" in warn.fix
    none_active = amd_node(rdma=rdma_devices("mlx5_0:1:DOWN"))
    assert "No RDMA port is active" in findings_of(none_active, "network.rdma-ports")[0].title
    mixed = amd_node(rdma=rdma_devices("mlx5_0:1:ACTIVE", "mlx5_1:1:ACTIVE"))
    mixed.rdma[1].ports[0].rate = "100 Gb/sec (4X EDR)"
    assert "different rates" in findings_of(mixed, "network.rdma-ports")[0].title


def test_roce_gids():
    facts = amd_node(rdma=rdma_devices("bnxt_re0:1:ACTIVE", link_layer="Ethernet"))
    port = facts.rdma[0].ports[0]
    port.gids = [Gid(0, "fe80:0000:0000:0000:5e6f:69ff:fe8d:1a2b", "IB/RoCE v1")]
    (finding,) = findings_of(facts, "network.roce-gids")
    assert finding.level == "warn" and "no RoCE v2 GID" in finding.title
    port.gids += [Gid(1, "fe80:0000:0000:0000:5e6f:69ff:fe8d:1a2b", "RoCE v2"),
                  Gid(3, "0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2", "ens1f0np0")]
    (finding,) = findings_of(facts, "network.roce-gids")
    assert finding.level == "info" and "GID index 3" in finding.title
    facts.env = {"NCCL_IB_GID_INDEX": "0"}
    found = findings_of(facts, "network.roce-gids")
    assert found[0].level == "warn" and found[0].fix == "export NCCL_IB_GID_INDEX=3"
    assert findings_of(amd_node(), "network.roce-gids") == []   # InfiniBand ports: no GIDs rule


# --------------------------------------------------------------------------- UCX, NCCL log


def test_ucx_without_rocm_on_a_rocm_host_warns():
    cuda_ucx = UcxVersion(version="1.16.0", with_cuda=True)
    # the summary is not repeated
    (warn,) = findings_of(amd_node(ucx_version=cuda_ucx), "ucx.build")
    assert warn.level == "warn" and "--with-rocm" in warn.fix
    assert warn.detail.startswith("UCX 1.16.0; ROCm support: no; CUDA support: yes")
    rocm_ucx = UcxVersion(version="1.18.1", with_rocm=True)
    assert levels_of(amd_node(ucx_version=rocm_ucx), "ucx.build") == ["info"]
    # ROCm support shown only by ucx_info -d (a rocm memory domain) counts too
    devices = UcxDevices(memory_domains=[UcxMemoryDomain("rocm_cpy", memory_types=["rocm"])])
    assert levels_of(amd_node(ucx_version=UcxVersion(version="1.17.0"), ucx_devices=devices),
                  "ucx.build") == ["info"]
    missing = cpu_node(tools={"ucx_info-v.txt": ToolRun("ucx_info-v.txt", ["ucx_info", "-v"],
                                                        "missing")})
    assert "not installed" in findings_of(missing, "ucx.build")[0].title
    assert findings_of(missing, "tools.availability") == []      # said once, by ucx.build


def test_nccl_log_mixed_versions_and_socket_fallback():
    log = NcclDebugSummary(library="RCCL", version="2.21.5",
                           versions_seen=["2.21.5-HEAD:eef7b29", "2.20.5-HEAD:abc"],
                           network_counts={"Socket": 8}, network="Socket")
    found = findings_of(amd_node(nccl_log=log), "nccl.log")
    assert [f.level for f in found] == ["fail", "info"]
    assert "different RCCL versions" in found[0].title
    # The Socket fall-back is its own check now (issue 10): one node, so a warning.
    (socket,) = findings_of(amd_node(nccl_log=log), "nccl.socket-fallback")
    assert socket.level == "warn" and "Socket" in socket.title


# --------------------------------------------------------------------------- environment


@pytest.mark.parametrize("value, level, text", [
    ("eth", "ok", "eth0"),
    ("=eth0", "ok", "selects eth0"),
    ("ib", "fail", "matches no interface"),
    ("=eth", "fail", "matches no interface"),
    ("^eth,ens", "fail", "excludes every interface"),
    ("^=docker0", "ok", "eth0, ens5"),
    ("", "fail", "is empty"),
])
def test_socket_ifname(value, level, text):
    found = findings_of(amd_node(env={"NCCL_SOCKET_IFNAME": value}), "env.socket-ifname")
    assert found[-1].level == level and text in found[-1].title
    if level == "fail":
        assert "eth0" in found[-1].fix


def test_socket_ifname_down_and_partial_lists():
    facts = amd_node(env={"NCCL_SOCKET_IFNAME": "ens"},
                     interfaces=net_interfaces("lo:unknown", "eth0:up", "ens5:down"))
    assert levels_of(facts, "env.socket-ifname") == ["warn"]
    facts = amd_node(env={"NCCL_SOCKET_IFNAME": "=eth0,bond0"})
    assert levels_of(facts, "env.socket-ifname") == ["info", "ok"]
    assert levels_of(amd_node(env={"NCCL_SOCKET_IFNAME": "eth"}, interfaces=[]),
                  "env.socket-ifname") == ["info"]
    assert findings_of(amd_node(), "env.socket-ifname") == []


@pytest.mark.parametrize("value, level", [
    ("eth0", "ok"), ("eth0,ens5", "ok"), ("eth9", "fail"), ("eth", "fail"), ("^lo", "fail"),
    ("=eth0", "fail"),
])
def test_gloo_socket_ifname_takes_exact_names(value, level):
    assert levels_of(amd_node(env={"GLOO_SOCKET_IFNAME": value}), "env.gloo-ifname") == [level]


@pytest.mark.parametrize(("var", "value"), [("NCCL_SOCKET_IFNAME", "ib"),
                                            ("NCCL_SOCKET_IFNAME", ""),
                                            ("GLOO_SOCKET_IFNAME", "eth9")])
def test_ifname_fix_never_pastes_a_placeholder(var: str, value: str):
    # Only loopback up: no interface to name, so no "export X=<interface>" to paste.
    facts = amd_node(env={var: value}, interfaces=net_interfaces("lo:unknown", "eth0:down"))
    rule_id = "env.socket-ifname" if var.startswith("NCCL") else "env.gloo-ifname"
    (finding,) = findings_of(facts, rule_id)
    assert finding.level == "fail" and not finding.fix.startswith("export")
    assert "=<interface>" not in finding.fix and "such as <interface>" not in finding.fix


def test_gloo_socket_ifname_down():
    facts = cpu_node(env={"GLOO_SOCKET_IFNAME": "eth1"},
                     interfaces=net_interfaces("lo:unknown", "eth0:up", "eth1:down"))
    assert levels_of(facts, "env.gloo-ifname") == ["warn"]


@pytest.mark.parametrize("value, expected", [
    ("mlx5", ["ok"]),
    ("=mlx5_0:1,mlx5_1:1", ["ok"]),
    ("mlx5_0", ["ok"]),
    ("=mlx5_2", ["fail"]),                 # names no device here
    ("^mlx5", ["fail"]),                   # excludes everything
    ("^=mlx5_1", ["ok"]),
    ("=mlx5_0,mlx5_7", ["warn", "ok"]),    # one entry absent
    ("=mlx5_0:2", ["fail"]),               # port 2 does not exist
    ("mlx5_0:a", ["fail", "ok"]),          # unreadable port; the device still matches
])
def test_ib_hca(value, expected):
    assert levels_of(amd_node(env={"NCCL_IB_HCA": value}), "env.ib-hca") == expected


def test_ib_hca_inactive_ports_and_no_rdma():
    facts = amd_node(env={"NCCL_IB_HCA": "=mlx5_1"}, rdma=rdma_devices("mlx5_0:1:ACTIVE",
                                                                "mlx5_1:1:DOWN"))
    assert levels_of(facts, "env.ib-hca") == ["fail"]
    facts.env = {"NCCL_IB_HCA": "mlx5"}
    (finding,) = findings_of(facts, "env.ib-hca")
    assert finding.level == "warn" and "mlx5_1:1" in finding.title
    (finding,) = findings_of(cpu_node(env={"NCCL_IB_HCA": "mlx5_0"}), "env.ib-hca")
    assert finding.level == "warn" and "no RDMA device" in finding.title


@pytest.mark.parametrize("name", ["NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS",
                                  "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_NTHREADS",
                                  "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE"])
def test_debug_knobs_left_set(name):
    (finding,) = findings_of(amd_node(env={name: "1"}), "env.debug-knobs")
    assert finding.level == "warn" and name in finding.title and finding.fix == f"unset {name}"


@pytest.mark.parametrize("value, expected", [("INFO", ["warn"]), ("trace", ["warn"]),
                                             ("WARN", []), ("VERSION", [])])
def test_nccl_debug_left_on(value, expected):
    assert levels_of(amd_node(env={"NCCL_DEBUG": value}), "env.nccl-debug") == expected


def test_obsolete_rccl_switches_depend_on_installed_version():
    (finding,) = findings_of(amd_node(env={"RCCL_ENABLE_CLIQUE": "1"}), "env.obsolete")
    assert finding.level == "warn" and "2.21.5" in finding.title and "2.12.10" in finding.detail
    old = amd_node(env={"RCCL_ENABLE_CLIQUE": "1"})
    old.torch.nccl_version = "2.11.4"
    assert findings_of(old, "env.obsolete") == []                  # still there in RCCL 2.11.4
    unknown = amd_node(env={"RCCL_ENABLE_HIPGRAPH": "1"})
    unknown.torch.nccl_version = None
    assert levels_of(unknown, "env.obsolete") == ["info"]
    (renamed,) = findings_of(cpu_node(env={"NCCL_MAX_NRINGS": "4"}), "env.obsolete")
    assert renamed.level == "warn" and "export NCCL_MAX_NCHANNELS=4" in renamed.fix
    (torch_name,) = findings_of(cpu_node(env={"NCCL_ASYNC_ERROR_HANDLING": "1"}), "env.obsolete")
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING" in torch_name.title


def test_typos_and_unknown_variables():
    facts = cpu_node(env={"NCCL_SOCKET_IFNAMES": "eth0", "NCCL_FOO_BAR_BAZ": "1",
                          "NCCL_SOCKET_IFNAME": "eth0", "UCX_TLS": "rc"})
    found = findings_of(facts, "env.typo")
    assert [f.level for f in found] == ["warn", "info"]
    assert "did you mean NCCL_SOCKET_IFNAME" in found[0].title
    assert "export NCCL_SOCKET_IFNAME=eth0" in found[0].fix
    assert "NCCL_FOO_BAR_BAZ" in found[1].title and "UCX_TLS" not in found[1].title


# --------------------------------------------------------------------------- self-test, tools


def test_selftest_findings():
    ok = SelfTestResult("ok", time_us=1234.4, busbw_gbs=0.85, wrong=0, method="how")
    (finding,) = findings_of(cpu_node(selftest=ok), "selftest.allreduce")
    assert finding.level == "ok" and "1234 us per op, busbw 0.85 GB/s" in finding.title
    assert finding.detail == "how"
    failed = SelfTestResult("fail", error="rank 0: Connection refused")
    (finding,) = findings_of(cpu_node(selftest=failed), "selftest.allreduce")
    assert finding.level == "fail" and "Connection refused" in finding.detail
    assert levels_of(cpu_node(), "selftest.allreduce") == ["info"]


def test_tools_missing_timeout_error_and_unparsed_lines():
    def run(file: str, argv: list[str], status: str, **kw) -> ToolRun:
        return ToolRun(file, argv, status, **kw)

    tools = {"rocm-smi--showtopo.txt": run("rocm-smi--showtopo.txt",
                                           ["rocm-smi", "--showtopo"], "timeout",
                                           stderr="no answer within 20 s; killed"),
             "amd-smi-static.txt": run("amd-smi-static.txt", ["amd-smi", "static"], "missing"),
             "lspci-vvv.txt": run("lspci-vvv.txt", ["lspci", "-vvv"], "error", returncode=1,
                                  stderr="pcilib: cannot open\nmore")}
    facts = amd_node(tools=tools, notes={"rocminfo.txt": ["line 3: odd"]})
    found = findings_of(facts, "tools.availability")
    assert [f.level for f in found] == ["warn", "info", "info", "info"]
    assert "rocm-smi --showtopo" in found[0].title and "dmesg" in found[0].fix
    assert "amd-smi" in found[1].title
    assert found[2].detail == "pcilib: cannot open"
    # every AMD tool missing on an AMD node is a warning
    only_missing = {"rocminfo.txt": run("rocminfo.txt", ["rocminfo"], "missing")}
    assert levels_of(amd_node(tools=only_missing), "tools.availability") == ["warn"]
