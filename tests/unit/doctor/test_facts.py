"""RawCapture -> Facts: real tool outputs (tests/fixtures), a fake
sysfs tree, lspci and env.txt samples of our own."""

from __future__ import annotations

import json
from pathlib import Path

from collscope.doctor import diagnose, json_report
from collscope.doctor.facts import facts_from, parse_env, parse_lspci_acs
from collscope.doctor.probes import read_host_files
from tests.conftest import fixture_path

GIB = 1 << 30


def real(name: str) -> str:
    return fixture_path("tool-outputs", name).read_text()


def mi300x_capture() -> dict[str, str]:
    return {"amd-smi-topology.txt": real("amd-smi_topology_mi300x_8gpu_rocm61.txt"),
            "rocminfo.txt": real("rocminfo_mi300x_excerpt_agents1-3.txt")}


def h200_capture() -> dict[str, str]:
    return {"nvidia-smi-query-gpu.csv": real("nvidia-smi_query-gpu_csv_h200_8gpu.txt"),
            "nvidia-smi-topo-m.txt": real("nvidia-smi_topo_m_h200_8gpu_8nic.txt")}


def test_mi300x_amd_smi_topology_and_rocminfo():
    facts = facts_from(mi300x_capture())
    assert facts.vendor == "amd" and facts.topology_source == "amd-smi-topology.txt"
    topo = facts.topology
    assert topo is not None and topo.gpus == 8
    for i in range(8):
        for j in range(8):
            assert topo.link_type[i][j] == ("self" if i == j else "xgmi")
            assert topo.weight[i][j] == (0 if i == j else 15)
    assert len(facts.gpus) == 8                              # 1 from rocminfo, 7 from the matrix
    assert facts.gpus[0].name == "AMD Instinct MI300X"
    assert facts.gpus[0].memory_bytes == 206141652992
    assert facts.rocm_runtime == "1.14"


def test_h200_query_csv_and_topo_matrix():
    facts = facts_from(h200_capture())
    assert facts.vendor == "nvidia" and len(facts.gpus) == 8
    assert {g.name for g in facts.gpus} == {"NVIDIA H200"}
    assert facts.gpus[0].memory_bytes == 143771 * 1024 * 1024
    assert facts.driver_version == "570.211.01"
    topo = facts.topology
    assert topo.link_type[0][1] == "nvlink" and topo.weight[0][1] == 18
    assert [g.numa_node for g in facts.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert facts.gpu_nic_link == {i: "pix" for i in range(8)}
    assert facts.gpu_nearest_nic[0] == ["mlx5_4"] and facts.gpu_nearest_nic[7] == ["mlx5_2"]


def test_mi308x_rocm_smi_names_from_device_ids():
    text = real("rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt")
    facts = facts_from({"rocm-smi--showtopo.txt": real("rocm-smi_showtopo_mi308x_8gpu.txt"),
                        "rocm-smi.txt": text, "rocm-smi--showmeminfo-vram.txt": text})
    assert facts.vendor == "amd" and len(facts.gpus) == 8
    assert {g.name for g in facts.gpus} == {"AMD Instinct MI308X"}
    assert {g.memory_bytes for g in facts.gpus} == {206141652992}
    assert [g.numa_node for g in facts.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert facts.topology.link_type[2][5] == "xgmi" and facts.topology.weight[2][5] == 15


def test_product_names_and_static():
    facts = facts_from({"rocm-smi--showproductname.txt":
                        real("rocm-smi_productinfo_section_mi300x_4gpu_sriov.txt")})
    assert [g.name for g in facts.gpus] == ["AMD Instinct MI300X OAM"] * 4
    static = facts_from({"amd-smi-static.txt": real("amd-smi_static_asic_mi308x.txt")})
    assert static.gpus[0].name == "MI308X" and static.vendor == "amd"


def test_rdma_from_ibv_devinfo_when_sysfs_is_absent():
    facts = facts_from({"ibv_devinfo-v.txt": real("ibv_devinfo_vv_connectx6_2hca.txt")})
    assert facts.rdma_source == "ibv_devinfo-v.txt"
    ports = {(d.name, p.port): p for d in facts.rdma for p in d.ports}
    assert ports["mlx5_0", 1].state == "ACTIVE" and ports["mlx5_0", 1].active
    assert ports["mlx5_0", 1].rate == "4X 50.0 Gbps"
    assert ports["mlx5_0", 1].link_layer == "InfiniBand"
    assert ports["mlx5_1", 1].state == "DOWN" and not ports["mlx5_1", 1].active
    assert facts.rdma[0].fw_ver == "20.37.1700"


def test_ucx_and_nccl_logs():
    facts = facts_from({"ucx_info-v.txt": real("ucx_info_v_ucx1.18_rocm_mi308x.txt"),
                        "ucx_info-d.txt": real("ucx_info_d_ucx1.16_cuda_connectx6_ib.txt"),
                        "nccl-debug.log":
                            real("rccl_debug_info_mi300x_8gpu_azure_version_header_excerpt.txt")})
    assert facts.ucx_version.version == "1.18.1" and facts.ucx_version.with_rocm is True
    assert "rc_mlx5" in {t.name for t in facts.ucx_devices.transports}
    assert facts.nccl_log.library == "RCCL" and facts.rccl_or_nccl_version == "2.21.5"


def test_fixture_bundle_findings_mi300x():
    facts, findings = diagnose(mi300x_capture())
    by_id = {f.id: f for f in findings}
    assert by_id["topology.links"].title == "8 GPUs: 28 pair(s) xgmi (weight 15)"
    assert by_id["topology.fabric"].level == "ok"
    assert "All 28 GPU pairs over xgmi" in by_id["topology.fabric"].title
    assert not [f for f in findings if f.level == "fail"]
    report = json.loads(json.dumps(json_report(findings, facts)))
    assert report["inventory"]["topology"]["link_type"][0] == ["self"] + ["xgmi"] * 7


def test_fixture_bundle_findings_h200_with_a_down_hca():
    capture = h200_capture() | {"ibv_devinfo-v.txt": real("ibv_devinfo_vv_connectx6_2hca.txt"),
                                "env.txt": "NCCL_IB_HCA==mlx5_1\n"}
    _, findings = diagnose(capture)
    by_id = {}
    for f in findings:
        by_id.setdefault(f.id, f)
    assert by_id["topology.fabric"].title == "All 28 GPU pairs over nvlink"
    assert by_id["env.ib-hca"].level == "fail"     # selects only mlx5_1, whose port is down
    assert by_id["network.rdma-ports"].level == "warn"


# --------------------------------------------------------------------------- sysfs and more


def _write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def fake_sysfs(root: Path) -> None:
    files = {
        "/proc/sys/kernel/numa_balancing": "1\n",
        "/proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro\n",
        "/sys/devices/system/node/online": "0-1\n",
        "/opt/rocm/.info/version": "6.3.1-48\n",
        "/sys/module/amdgpu/version": "6.10.5\n",
        "/sys/class/net/lo/operstate": "unknown\n",
        "/sys/class/net/eth0/operstate": "up\n",
        "/sys/class/net/eth0/speed": "25000\n",
        "/sys/class/net/eth0/mtu": "9000\n",
        "/sys/class/net/eth0/device/numa_node": "1\n",
        "/sys/class/net/eth1/operstate": "down\n",
        "/sys/class/net/eth1/speed": "-1\n",
        "/sys/class/infiniband/mlx5_0/fw_ver": "28.39.1002\n",
        "/sys/class/infiniband/mlx5_0/device/numa_node": "0\n",
        "/sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE\n",
        "/sys/class/infiniband/mlx5_0/ports/1/phys_state": "5: LinkUp\n",
        "/sys/class/infiniband/mlx5_0/ports/1/rate": "400 Gb/sec (4X NDR)\n",
        "/sys/class/infiniband/mlx5_0/ports/1/link_layer": "Ethernet\n",
        "/sys/class/infiniband/mlx5_0/ports/1/gids/0": "fe80:0000:0000:0000:0000:0000:0000:0001\n",
        "/sys/class/infiniband/mlx5_0/ports/1/gids/1": "0000:0000:0000:0000:0000:0000:0000:0000\n",
        "/sys/class/infiniband/mlx5_0/ports/1/gids/3": "0000:0000:0000:0000:0000:ffff:0a00:0005\n",
        "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/0": "IB/RoCE v1\n",
        "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3": "RoCE v2\n",
        "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3": "eth0\n",
        "/sys/bus/pci/devices/0000:0c:00.0/class": "0x120000\n",
        "/sys/bus/pci/devices/0000:0c:00.0/vendor": "0x1002\n",
        "/sys/bus/pci/devices/0000:0c:00.0/device": "0x74a1\n",
        "/sys/bus/pci/devices/0000:0c:00.0/numa_node": "0\n",
        "/sys/bus/pci/devices/0000:00:1f.0/class": "0x060100\n",    # ISA bridge: not kept
        "/sys/bus/pci/devices/0000:00:1f.0/numa_node": "0\n",
    }
    for path, text in files.items():
        _write(root, path, text)


def test_host_files_from_a_fake_tree(tmp_path):
    fake_sysfs(tmp_path)
    capture = read_host_files(tmp_path)
    assert "sysfs/sys/bus/pci/devices/0000:00:1f.0/class" not in capture
    assert "sysfs/sys/class/infiniband/mlx5_0/ports/1/gids/1" not in capture   # all-zero GID
    facts = facts_from(capture)
    host = facts.host
    assert (host.numa_balancing, host.numa_nodes) == (1, 2)
    assert host.cmdline.endswith("ro") and host.rocm_version == "6.3.1-48"
    assert host.amdgpu_version == "6.10.5"
    ifaces = {i.name: i for i in facts.interfaces}
    assert ifaces["eth0"].speed_mbps == 25000 and ifaces["eth0"].mtu == 9000
    assert ifaces["eth0"].numa_node == 1 and ifaces["eth0"].is_up
    assert ifaces["eth1"].speed_mbps is None and not ifaces["eth1"].is_up
    assert ifaces["lo"].is_up
    (dev,) = facts.rdma
    port = dev.ports[0]
    assert (dev.name, dev.numa_node, dev.fw_ver) == ("mlx5_0", 0, "28.39.1002")
    assert (port.state, port.phys_state, port.link_layer) == ("ACTIVE", "LinkUp", "Ethernet")
    assert [(g.index, g.type, g.ndev, g.ipv4) for g in port.gids] == [
        (0, "IB/RoCE v1", None, False), (3, "RoCE v2", "eth0", True)]
    (pci,) = facts.pci
    assert pci.is_gpu and pci.numa_node == 0
    assert facts.vendor == "amd"           # an Instinct GPU on the PCI bus, no tool needed


LSPCI = """\
00:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge
\tCapabilities: [2a0 v1] Access Control Services
\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-

0000:80:01.1 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch
\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-

0c:00.0 Processing accelerators: Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd- EgressCtrl- DirectTrans-
"""


def test_lspci_acs():
    acs = parse_lspci_acs(LSPCI)
    assert acs.checked and not acs.access_denied
    assert [(b.address, b.redirects) for b in acs.bridges] == [("00:01.1", True),
                                                             ("0000:80:01.1", False)]
    denied = parse_lspci_acs("00:01.1 PCI bridge: x\n\tCapabilities: <access denied>\n")
    assert denied.access_denied and denied.bridges == []


def test_env_file_parsing_drops_secrets():
    env = parse_env("# comment\nNCCL_DEBUG=WARN\nexport NCCL_IB_HCA='mlx5_0:1'\n"
                    "UCX_API_KEY=hunter2\nNCCL_SECRET_TOKEN=x\nnot a line\n"
                    "NCCL_X=a\\nb\n=novalue\n")
    assert env == {"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5_0:1", "NCCL_X": "a\nb"}


def test_env_file_parsing_drops_pass_names_and_hides_proxy_passwords():
    env = parse_env("NCCL_NET_PLUGIN_PASS=sq1\nDB_PASS=sq2\nMYSQL_PWD=sq3\nUCX_TLS=rc\n"
                    "HTTPS_PROXY=http://u:sq4@p:3128\nNCCL_IB_HCA=mlx5_0\n")
    assert env == {"UCX_TLS": "rc", "HTTPS_PROXY": "http://u:<hidden>@p:3128",
                   "NCCL_IB_HCA": "mlx5_0"}


def test_odd_json_files_are_notes_not_crashes():
    facts = facts_from({"host.json": "{not json", "torch.json": "[1, 2]",
                        "commands.json": '{"x": 5, "y": {"argv": "oops", "seconds": "slow"}}',
                        "selftest.json": '{"status": "ok", "bogus": 1}',
                        "hw-inventory.json": '{"backend": "amd", "gpus": [{"index": "x"}, 3]}'})
    assert "host.json" in facts.notes
    assert facts.torch is not None and facts.torch.version is None
    assert facts.selftest.status == "ok"
    assert facts.gpus == []
