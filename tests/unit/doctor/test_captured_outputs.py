"""Tool outputs read for what they are, whatever their file name: content recognition, the new
tables (nvidia-smi, bare amd-smi, amd-smi monitor, ibstat), and the JSON/CSV modes doctor runs."""

from __future__ import annotations

import json

import pytest

from collscope.doctor import probes
from collscope.doctor.checks import run_checks
from collscope.doctor.facts import facts_from
from collscope.doctor.recognize import identify, identify_all, place
from collscope.parsers import ibstat, smi_tables
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.unit.parsers import mutations

OWN = OWN_FIXTURES / "tool-outputs"
MIB = 1 << 20


def own(name: str) -> str:
    return (OWN / name).read_text()


def real(name: str) -> str:
    return fixture_path("tool-outputs", name).read_text()


@pytest.mark.parametrize(("name", "slot"), [
    ("amd-smi_topology_mi300x_8gpu_rocm61.txt", "amd-smi-topology.txt"),
    ("amd-smi_static_asic_mi308x.txt", "amd-smi-static.txt"),
    ("amd-smi_metric_usage_mi3xx.txt", "amd-smi-metric.txt"),
    ("amd-smi_metric_pcie.txt", "amd-smi-metric.txt"),
    ("rocm-smi_showtopo_mi308x_8gpu.txt", "rocm-smi--showtopo.txt"),
    ("rocm-smi_productinfo_section_mi300x_4gpu_sriov.txt", "rocm-smi--showproductname.txt"),
    ("rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt", "rocm-smi.txt"),
    ("rocm-smi_json_allinfo_mi100_4gpu_rocm602.json", "rocm-smi--showtopo.txt"),
    ("rocminfo_mi300x_excerpt_agents1-3.txt", "rocminfo.txt"),
    ("nvidia-smi_query-gpu_csv_h200_8gpu.txt", "nvidia-smi-query-gpu.csv"),
    ("nvidia-smi_topo_m_h200_8gpu_8nic.txt", "nvidia-smi-topo-m.txt"),
    ("ibv_devinfo_vv_connectx6_2hca.txt", "ibv_devinfo-v.txt"),
    ("ucx_info_d_ucx1.16_cuda_connectx6_ib.txt", "ucx_info-d.txt"),
    ("ucx_info_v_ucx1.15_cuda_h100.txt", "ucx_info-v.txt"),
    ("nccl_debug_info_h800_8gpu_socket_init_excerpt.txt", "nccl-debug.log"),
])
def test_real_outputs_recognised_by_content(name: str, slot: str) -> None:
    assert identify(real(name)) == slot


@pytest.mark.parametrize(("name", "slot"), [
    ("nvidia-smi_default_table_own_2gpu_memory_held.txt", "nvidia-smi.txt"),
    ("amd-smi_default_table_own_2gpu.txt", "amd-smi.txt"),
    ("amd-smi_monitor_own_2gpu.txt", "amd-smi-monitor.txt"),
    ("ibstat_own_2hca.txt", "ibstat.txt"),
    ("amd-smi_static_own_2gpu.json", "amd-smi-static.txt"),
    ("amd-smi_metric_own_2gpu.json", "amd-smi-metric.txt"),
    ("amd-smi_topology_own_4gpu.json", "amd-smi-topology.txt"),
    ("rocm-smi_json_showtopo_own_2gpu.json", "rocm-smi--showtopo.txt"),   # after a WARNING line
    ("rocm-smi_concise_own_rocm57_2gpu.txt", "rocm-smi.txt"),
    ("rocm-smi_concise_own_rocm61_2gpu.txt", "rocm-smi.txt"),
    ("ucx_info_v_ucx1.9_legacy_sample.txt", "ucx_info-v.txt"),
])
def test_own_samples_recognised_by_content(name: str, slot: str) -> None:
    assert identify(own(name)) == slot


def test_one_file_with_several_outputs_fills_each_slot() -> None:
    text = real("rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt")
    assert identify_all(text) == ["rocm-smi.txt", "rocm-smi--showmeminfo-vram.txt"]
    placed = place({"gpus.log": text})
    assert set(placed.capture) == {"rocm-smi.txt", "rocm-smi--showmeminfo-vram.txt"}
    assert placed.moved == {"gpus.log": "rocm-smi.txt, rocm-smi--showmeminfo-vram.txt"}


def test_bundle_of_odd_names_is_read_and_the_unknown_file_named() -> None:
    capture = {"node1-status.txt": own("nvidia-smi_default_table_own_2gpu_memory_held.txt"),
               "ib.txt": own("ibstat_own_2hca.txt"), "notes.txt": "rebooted node1 at 9am\n",
               "rocm-smi.txt": own("rocm-smi_concise_own_rocm61_2gpu.txt")}
    facts = facts_from(capture)
    assert facts.read_as == {"node1-status.txt": "nvidia-smi.txt", "ib.txt": "ibstat.txt"}
    assert facts.unrecognised == ["notes.txt"]
    assert [d.name for d in facts.rdma] == ["mlx5_0", "mlx5_1"] and facts.rdma_source == \
        "ibstat.txt"
    assert facts.rdma[0].ports[0].state == "ACTIVE" and facts.rdma[1].ports[0].state == "DOWN"
    found = [f for f in run_checks(facts) if f.id == "tools.unrecognised"]
    (unknown,) = [f for f in found if f.level == "warn"]
    assert unknown.title.startswith("notes.txt: not recognised")
    assert "one tool per file" in unknown.fix
    assert [f for f in found if f.level == "info"] == []      # recognitions have their own id
    recognised = [f for f in run_checks(facts) if f.id == "tools.recognised"]
    assert {f.level for f in recognised} == {"info"}
    assert {f.title for f in recognised} == {
        "ib.txt read as ibstat.txt", "node1-status.txt read as nvidia-smi.txt"}


def test_files_under_bundle_names_are_checked_by_content_too() -> None:
    text = own("amd-smi_default_table_own_2gpu.txt")
    placed = place({"rocm-smi.txt": text})      # amd-smi's table under rocm-smi's name: moved
    assert placed.capture == {"amd-smi.txt": text}
    assert placed.moved == {"rocm-smi.txt": "amd-smi.txt"} and placed.unrecognised == []
    assert place({"amd-smi.txt": text}).moved == {}            # its own slot: stays
    twice = place({"amd-smi.txt": text, "node2.txt": text})
    assert twice.shadowed == {"node2.txt": "amd-smi.txt"} and twice.moved == {}
    (finding,) = [f for f in run_checks(facts_from({"amd-smi.txt": text, "node2.txt": text}))
                  if f.id == "tools.unrecognised"]
    assert finding.level == "warn" and finding.title == \
        "node2.txt: a second amd-smi.txt output, not read"
    assert finding.fix.startswith("keep one output per tool")


def test_nvidia_smi_default_table() -> None:
    table = smi_tables.parse_nvidia_smi(own("nvidia-smi_default_table_own_2gpu_memory_held.txt"))
    assert table.warnings == [] and table.value.driver == "570.211.01"
    first, second = table.value.gpus
    assert (first.index, first.name, first.bus_id) == (0, "NVIDIA H200", "00000000:18:00.0")
    assert (first.mem_used_bytes, first.mem_total_bytes) == (40961 * MIB, 143771 * MIB)
    assert (first.util_percent, first.power_w, first.temperature_c) == (0.0, 118.0, 31.0)
    assert second.mem_used_bytes == 1 * MIB
    (process,) = table.value.processes
    assert (process.gpu, process.pid, process.name, process.mem_bytes) == (
        0, 424242, "/usr/bin/python3", 40950 * MIB)


def test_bare_amd_smi_table_and_monitor() -> None:
    table = smi_tables.parse_amd_smi_table(own("amd-smi_default_table_own_2gpu.txt")).value
    assert table.driver == "6.14.14"
    first, second = table.gpus
    assert (first.bus_id, first.name, first.util_percent) == ("0000:05:00.0",
                                                              "AMD Instinct MI300X", 0.0)
    assert (first.mem_used_bytes, first.mem_total_bytes) == (50012 * MIB, 196592 * MIB)
    assert (second.util_percent, second.power_w, second.temperature_c) == (97.0, 402.0, 52.0)
    assert [(p.gpu, p.pid, p.name, p.mem_bytes) for p in table.processes] == [
        (1, 918273, "python3", 60 << 30)]
    monitor = smi_tables.parse_amd_smi_monitor(own("amd-smi_monitor_own_2gpu.txt")).value
    assert [(g.index, g.util_percent, g.mem_used_bytes, g.mem_total_bytes, g.power_w)
            for g in monitor.gpus] == [(0, 0.0, 24576 * MIB, 196592 * MIB, 139.0),
                                       (1, 0.0, 283 * MIB, 196592 * MIB, 141.0)]


def test_ibstat() -> None:
    parsed = ibstat.parse_ibstat(own("ibstat_own_2hca.txt"))
    assert parsed.warnings == []
    first, second = parsed.value
    assert (first.hca_id, first.fw_ver, first.phys_port_cnt) == ("mlx5_0", "20.37.1700", 1)
    port = first.ports[0]
    assert (port.state, port.phys_state, port.link_layer, port.rate_gbps) == (
        "PORT_ACTIVE", "LINK_UP", "InfiniBand", 200.0)
    assert second.ports[0].state == "PORT_DOWN" and second.ports[0].port_lid == 65535


def test_doctor_runs_vendor_tools_in_json_and_csv_modes() -> None:
    argv = {t.file: t.argv for t in probes.TOOLS}
    for name in ("amd-smi-static.txt", "amd-smi-topology.txt", "amd-smi-metric.txt",
                 "rocm-smi.txt", "rocm-smi--showproductname.txt", "rocm-smi--showtopo.txt",
                 "rocm-smi--showmeminfo-vram.txt"):
        assert argv[name][-1] == "--json", name
    assert argv["nvidia-smi-query-gpu.csv"][-1] == "--format=csv,noheader,nounits"


def test_noheader_nounits_query_csv_is_read_with_the_fields_doctor_asked_for() -> None:
    text = ("0, NVIDIA H200, 143771, 40961, 0, 570.211.01, 00000000:18:00.0, GPU-1, 5, 16\n"
            "1, NVIDIA H200, 143771, 1, 0, 570.211.01, 00000000:2A:00.0, GPU-2, 5, 16\n")
    facts = facts_from({"nvidia-smi-query-gpu.csv": text})
    assert [g.name for g in facts.gpus] == ["NVIDIA H200"] * 2
    assert facts.gpus[0].memory_bytes == 143771 * MIB and facts.gpus[1].pci_bus_id == \
        "00000000:2A:00.0"
    assert facts.gpus[0].extra["pcie.link.gen.current"] == "5"
    assert facts.usage.source == "nvidia-smi-query-gpu.csv"
    assert facts.usage.gpus[0].mem_used_bytes == 40961 * MIB


def test_rocm_smi_json_modes_give_the_gpu_list() -> None:
    doc = {"card0": {"Card series": "AMD Instinct MI300X", "VRAM Total Memory (B)":
                     "206141652992", "GPU use (%)": "0", "GPU Memory Allocated (VRAM%)": "25"},
           "card1": {"Card series": "AMD Instinct MI300X", "VRAM Total Memory (B)":
                     "206141652992", "GPU use (%)": "3", "GPU Memory Allocated (VRAM%)": "1"}}
    text = json.dumps(doc)
    facts = facts_from({"rocm-smi--showproductname.txt": text, "rocm-smi.txt": text})
    assert facts.vendor == "amd" and [g.name for g in facts.gpus] == ["AMD Instinct MI300X"] * 2
    assert facts.usage.source == "rocm-smi.txt" and facts.usage.mem_percent == {0: 25, 1: 1}


@pytest.mark.parametrize("path", mutations.sample_params(
    [], ["nvidia-smi_default_table_own_2gpu_memory_held.txt", "amd-smi_default_table_own_2gpu.txt",
         "amd-smi_monitor_own_2gpu.txt", "ibstat_own_2hca.txt"]))
def test_damaged_tables_never_raise(path) -> None:
    mutations.assert_parsers_never_raise(
        [smi_tables.parse_nvidia_smi, smi_tables.parse_amd_smi_table,
         smi_tables.parse_amd_smi_monitor, ibstat.parse_ibstat], path)


@pytest.mark.parametrize(("text", "mem", "util"), [
    (lambda: own("rocm-smi_concise_own_rocm57_2gpu.txt"), {0: 1.0, 1: 64.0}, [0.0, 99.0]),
    (lambda: own("rocm-smi_concise_own_rocm61_2gpu.txt"), {0: 37.0, 1: 0.0}, [88.0, 0.0]),
    (lambda: real("rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt"),
     {i: 0.0 for i in range(8)}, [0.0] * 8),
], ids=["rocm5.7", "rocm6.1", "rocm7.2"])
def test_rocm_smi_concise_layouts_give_usage(text, mem, util) -> None:
    usage = facts_from({"gpus.txt": text()}).usage
    assert usage.source == "rocm-smi.txt"
    assert usage.mem_percent == mem and [g.util_percent for g in usage.gpus] == util


def test_amd_smi_static_saved_as_rocm_smi_is_moved_and_read() -> None:
    text = own("amd-smi_static_own_1gpu.txt")
    facts = facts_from({"rocm-smi.txt": text})
    assert facts.read_as == {"rocm-smi.txt": "amd-smi-static.txt"}
    assert [g.index for g in facts.gpus] == [0] and facts.vendor == "amd"
    (finding,) = [f for f in run_checks(facts) if f.id == "tools.recognised"]
    assert finding.title == "rocm-smi.txt read as amd-smi-static.txt"
    assert "not that of the tool rocm-smi.txt names" in finding.detail


@pytest.mark.parametrize(("name", "text", "meaning"), [
    ("nvidia-smi.txt", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
     "driver. Make sure that the latest NVIDIA driver is installed and running.\n",
     "nvidia-smi could not reach the NVIDIA driver"),
    ("nvidia-smi-query-gpu.csv", "Failed to initialize NVML: Driver/library version mismatch\n",
     "nvidia-smi could not initialise NVML"),
    ("rocm-smi.txt", "ERROR:root:Driver not initialized (amdgpu not found in modules)\n",
     "the AMD GPU tool could not reach the amdgpu driver"),
    ("amd-smi-static.txt", "bash: amd-smi: command not found\n",
     "the GPU tool is not installed"),
])
def test_gpu_tool_failure_text_is_a_finding_not_an_empty_gpu_list(name: str, text: str,
                                                                   meaning: str) -> None:
    facts = facts_from({name: text})
    assert facts.unrecognised == [] and facts.read_as == {}
    (finding,) = [f for f in run_checks(facts) if f.id == "tools.gpu-tool-failed"]
    assert finding.level == "fail" and finding.title == f"{name}: {meaning}"
    assert text.strip() in finding.detail and finding.fix


def test_file_under_a_bundle_name_that_matches_nothing_is_named() -> None:
    facts = facts_from({"rocm-smi.txt": "rebooted node1 at 9am\n"})
    assert facts.unrecognised == ["rocm-smi.txt"]
    # doctor's own machine-readable outputs under their names are not flagged
    assert place({"rocm-smi.txt": '{"card0": {"GPU use (%)": "0"}}'}).unrecognised == []
    assert place({"nvidia-smi-query-gpu.csv": "0, H200, 143771, 0, 0, 570.1, "
                  "00000000:18:00.0, GPU-1, 5, 16\n"}).unrecognised == []


@pytest.mark.parametrize(("name", "text"), [
    ("lspci-vvv.txt", "00:00.0 Host bridge: Intel Corporation Device 09a2 (rev 04)\n"
     "\tSubsystem: Intel Corporation Device 0000\n\tCapabilities: <access denied>\n"),
    ("ibv_devinfo-v.txt", "No IB devices found\n"),
])
def test_what_doctor_itself_saves_without_root_or_rdma_is_not_unrecognised(name: str,
                                                                            text: str) -> None:
    placed = place({name: text})
    assert placed.unrecognised == [] and placed.capture == {name: text}


@pytest.mark.parametrize(("text", "expected"), [
    ('{"card0": {}}', True), ('WARNING: AMD GPU device(s) is/are in a low-power state\n[1]', True),
    ("x\n" * 6 + "{}", False), ("GPU: 0\n    ASIC:\n", False), ("", False)])
def test_one_json_sniff_for_every_reader(text: str, expected: bool) -> None:
    from collscope.doctor import gpu_usage
    from collscope.doctor.facts import gpus
    from collscope.hw import topology
    from collscope.parsers.common import is_json
    assert is_json(text) is expected
    # the GPU list, usage and topology readers use that helper, and the one --query-gpu CSV
    # reader
    assert gpus.is_json is gpu_usage.is_json is topology.is_json is is_json
    assert gpus.nvidia_query is gpu_usage.nvidia_query
