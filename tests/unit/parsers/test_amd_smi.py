"""amd-smi parsers against real outputs (tests/fixtures) and our own samples.

Files under tests/fixtures/tool-outputs/amd-smi_*_own_* are our own text, shaped like the
tool's output for forms the real captures do not cover: every --json form (both the older
top-level list and the newer {"gpu_data": [...]} wrapper), the full static and metric text
trees, and the xgmi link-status table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from collscope.parsers import amd_smi
from collscope.parsers.common import Parsed
from tests.conftest import OWN_FIXTURES
from tests.unit.parsers import mutations
from tests.unit.parsers.mutations import own, real

OWN = OWN_FIXTURES / "tool-outputs"
REAL_FILES = [
    "amd-smi_static_asic_mi308x.txt",
    "amd-smi_topology_mi300x_8gpu_rocm61.txt",
    "amd-smi_xgmi_mi300x_8gpu.txt",
    "amd-smi_metric_usage_mi3xx.txt",
    "amd-smi_metric_pcie.txt",
]
OWN_FILES = sorted(p.name for p in OWN.glob("amd-smi_*"))
PARSERS: list[Callable[[str], Parsed[Any]]] = [
    amd_smi.parse_static,
    amd_smi.parse_metric,
    amd_smi.parse_topology,
    amd_smi.parse_xgmi,
]
MI300X_BDFS = [
    "0000:0c:00.0",
    "0000:22:00.0",
    "0000:38:00.0",
    "0000:5c:00.0",
    "0000:9f:00.0",
    "0000:af:00.0",
    "0000:bf:00.0",
    "0000:df:00.0",
]
KB = 1024
MIB = 1024**2


def off_diagonal(matrix: list[list]) -> set:
    return {v for i, row in enumerate(matrix) for j, v in enumerate(row) if i != j}


# --------------------------------------------------------------------------- real outputs


def test_static_asic_mi308x() -> None:
    parsed = amd_smi.parse_static(real("amd-smi_static_asic_mi308x.txt"))
    assert parsed.warnings == []
    (gpu,) = parsed.value
    assert gpu.index == 0 and gpu.name == "MI308X"
    assert gpu.extra["asic.device_id"] == "0x74a2"
    assert gpu.extra["asic.subsystem_id"] == "0x74a2"
    assert gpu.extra["asic.vendor_id"] == "0x1002"
    assert gpu.extra["asic.num_compute_units"] == "20"  # a partitioned (CPX) view
    assert gpu.extra["asic.target_graphics_version"] == "gfx942"
    assert gpu.extra["asic.oam_id"] == "5"
    assert gpu.memory_bytes is None and gpu.driver_version is None  # not in --asic


def test_topology_mi300x_rocm61() -> None:
    parsed = amd_smi.parse_topology(real("amd-smi_topology_mi300x_8gpu_rocm61.txt"))
    topo = parsed.value
    assert parsed.warnings == []
    assert topo.gpus == 8
    assert topo.extra["bdf"] == [[bdf] for bdf in MI300X_BDFS]
    assert [topo.link_type[i][i] for i in range(8)] == ["self"] * 8
    assert off_diagonal(topo.link_type) == {"xgmi"}
    assert off_diagonal(topo.weight) == {15} and topo.weight[2][2] == 0
    assert off_diagonal(topo.hops) == {1} and topo.hops[7][7] == 0
    assert off_diagonal(topo.extra["numa_bw"]) == {"50000-50000"}
    assert topo.extra["numa_bw"][3][3] == "N/A"
    assert {cell for row in topo.extra["access"] for cell in row} == {"ENABLED"}
    assert topo.numa_node == [None] * 8  # amd-smi topology shows no per-GPU NUMA node


def test_xgmi_mi300x_link_metrics() -> None:
    parsed = amd_smi.parse_xgmi(real("amd-smi_xgmi_mi300x_8gpu.txt"))
    gpus = parsed.value
    assert parsed.warnings == []
    assert [g.index for g in gpus] == list(range(8))
    assert [g.bdf for g in gpus] == MI300X_BDFS
    assert {g.bit_rate_gbps for g in gpus} == {32.0}
    assert {g.max_bandwidth_gbps for g in gpus} == {512.0}
    assert {g.link_type for g in gpus} == {"xgmi"}
    assert gpus[0].peer_bdfs == MI300X_BDFS
    assert gpus[0].read_bytes == [None, 2 * KB, 2 * KB, 1 * KB, 2 * KB, 1 * KB, 2 * KB, 2 * KB]
    assert gpus[0].write_bytes == [None] + [1 * KB] * 7
    assert gpus[2].read_bytes == [0, 1 * KB, None, 2 * KB, 1 * KB, 2 * KB, 0, 0]
    assert gpus[6].read_bytes == [0, 0, 0, 0, 0, 0, None, 0]
    assert gpus[7].write_bytes == [0] + [1 * KB] * 6 + [None]


def test_metric_usage_mi3xx_wrapped_jpeg_list() -> None:
    parsed = amd_smi.parse_metric(real("amd-smi_metric_usage_mi3xx.txt"))
    assert parsed.warnings == []
    (gpu,) = parsed.value
    assert gpu.gfx_activity_percent == 0.0 and gpu.umc_activity_percent == 0.0
    assert gpu.mm_activity_percent is None  # N/A
    assert gpu.vcn_activity_percent == [0.0] * 4
    assert gpu.jpeg_activity_percent == [0.0] * 32  # printed over three lines
    assert gpu.power_w is None and gpu.pcie_width is None


def test_metric_pcie_counters() -> None:
    parsed = amd_smi.parse_metric(real("amd-smi_metric_pcie.txt"))
    assert parsed.warnings == []
    (gpu,) = parsed.value
    assert (gpu.pcie_width, gpu.pcie_speed_gts) == (16, 16.0)
    assert gpu.pcie_replay_count == 0 and gpu.pcie_replay_rollover_count == 0
    assert gpu.pcie_l0_to_recovery_count == 1
    assert (gpu.pcie_nak_sent_count, gpu.pcie_nak_received_count) == (0, 0)
    assert gpu.pcie_bandwidth_mbps is None
    assert gpu.extra["pcie.current_bandwidth_sent"] == "N/A"
    assert gpu.extra["pcie.speed"] == "16 GT/s"


# --------------------------------------------------------------------------- own samples


def test_static_json_gpu_data_wrapper() -> None:
    parsed = amd_smi.parse_static(own("amd-smi_static_own_2gpu.json"))
    assert parsed.warnings == []
    first, second = parsed.value
    assert first.name == "AMD Instinct MI300X"
    assert first.pci_bus_id == "0000:0c:00.0" and second.pci_bus_id == "0000:22:00.0"
    assert first.memory_bytes == 196592 * MIB
    assert first.driver_version == "6.8.5" and first.vbios == "022.040.003.041.000001"
    assert first.serial == "0x5A1B2C3D4E5F6071"
    assert (first.numa_node, second.numa_node) == (0, 1)
    assert first.extra["bus.max_pcie_speed"] == "32 GT/s"
    assert first.extra["asic.num_compute_units"] == "304"


def test_static_text_full_tree_skips_cpu_block() -> None:
    parsed = amd_smi.parse_static(own("amd-smi_static_own_1gpu.txt"))
    (gpu,) = parsed.value
    assert gpu.name == "AMD Instinct MI250X"
    assert gpu.pci_bus_id == "0000:c1:00.0"
    assert gpu.vbios == "020.001.000.038.015" and gpu.driver_version == "6.3.6"
    assert gpu.memory_bytes == 65520 * MIB and gpu.numa_node == 3
    assert gpu.extra["board.product_name"] == "Aldebaran/MI200 [Instinct MI250X]"
    assert gpu.extra["cache_info.cache_0.cache_size"] == "16 KB"
    assert not any(k.startswith("smu") for k in gpu.extra)
    assert any("outside any 'GPU: n' block" in w for w in parsed.warnings)


def test_static_json_matches_list_form() -> None:
    wrapped = json.loads(own("amd-smi_static_own_2gpu.json"))
    as_list = json.dumps(wrapped["gpu_data"])
    assert (
        amd_smi.parse_static(as_list).value
        == amd_smi.parse_static(own("amd-smi_static_own_2gpu.json")).value
    )


def test_metric_json_value_unit_and_bare_numbers() -> None:
    parsed = amd_smi.parse_metric(own("amd-smi_metric_own_2gpu.json"))
    assert parsed.warnings == []
    busy, idle = parsed.value
    assert (busy.gfx_activity_percent, busy.umc_activity_percent) == (97.0, 41.0)
    assert busy.mm_activity_percent is None
    assert busy.vcn_activity_percent == [0.0, None, None, None]
    assert busy.power_w == 688.0
    assert (busy.temperature_edge_c, busy.temperature_hotspot_c, busy.temperature_mem_c) == (
        None,
        71.0,
        58.0,
    )
    assert busy.vram_total_bytes == 196592 * MIB and busy.vram_used_bytes == 150112 * MIB
    assert (busy.pcie_width, busy.pcie_speed_gts, busy.pcie_bandwidth_mbps) == (16, 32.0, 1184.0)
    assert (busy.pcie_replay_count, busy.pcie_l0_to_recovery_count) == (3, 12)
    assert busy.pcie_nak_received_count == 1
    assert (busy.ecc_correctable_count, busy.ecc_uncorrectable_count) == (2, 0)
    assert busy.energy_j == 1523377.125
    # older amd-smi: bare numbers, 'average_socket_power'
    assert idle.power_w == 139.0 and idle.temperature_edge_c == 35.0
    assert idle.vram_used_bytes == 283 * MIB and idle.pcie_speed_gts == 32.0


def test_metric_text_full_tree() -> None:
    parsed = amd_smi.parse_metric(own("amd-smi_metric_own_1gpu.txt"))
    assert parsed.warnings == []
    (gpu,) = parsed.value
    assert (gpu.gfx_activity_percent, gpu.umc_activity_percent) == (63.0, 22.0)
    assert gpu.jpeg_activity_percent == [0.0] * 16
    assert gpu.power_w == 512.0
    assert (gpu.temperature_hotspot_c, gpu.temperature_mem_c) == (66.0, 52.0)
    assert gpu.vram_total_bytes == 262128 * MIB and gpu.vram_used_bytes == 180224 * MIB
    assert (gpu.pcie_bandwidth_mbps, gpu.pcie_replay_count) == (2204.0, 7)
    assert gpu.energy_j == 8827431.5
    assert gpu.extra["clock.gfx_0.clk"] == "1898 MHz"
    assert gpu.extra["perf_level"] == "AMDSMI_DEV_PERF_LEVEL_AUTO"


def test_topology_json_two_xgmi_pairs_over_pcie() -> None:
    parsed = amd_smi.parse_topology(own("amd-smi_topology_own_4gpu.json"))
    topo = parsed.value
    assert parsed.warnings == []
    assert topo.gpus == 4
    assert topo.link_type[0] == ["self", "xgmi", "pcie", "pcie"]
    assert topo.link_type[3] == ["pcie", "pcie", "xgmi", "self"]
    assert topo.weight[0] == [0, 15, 40, 40] and topo.hops[2] == [2, 2, 0, 1]
    assert topo.extra["bdf"][2] == ["0000:46:00.0"]
    assert topo.extra["access"][1][3] == "ENABLED"
    assert topo.extra["numa_bw"][0][1] == "50000-50000"


def test_xgmi_json_nested_link_metrics() -> None:
    parsed = amd_smi.parse_xgmi(own("amd-smi_xgmi_own_2gpu.json"))
    assert parsed.warnings == []
    first, second = parsed.value
    assert first.bdf == "0000:0c:00.0" and first.link_type == "xgmi"
    assert (first.bit_rate_gbps, first.max_bandwidth_gbps) == (32.0, 512.0)
    assert first.peer_bdfs == ["0000:0c:00.0", "0000:22:00.0"]
    assert first.read_bytes == [None, 3 * MIB] and first.write_bytes == [None, 512 * KB]
    assert second.read_bytes == [1024**3, None]
    assert first.link_status == ["up"] * 6 + ["down", "disabled"]


def test_xgmi_text_link_status_table() -> None:
    parsed = amd_smi.parse_xgmi(own("amd-smi_xgmi_link_status_own_4gpu.txt"))
    assert parsed.warnings == []
    gpus = parsed.value
    assert {g.bit_rate_gbps for g in gpus} == {25.0}
    assert gpus[0].read_bytes == [None, 16 * MIB, 1024**3, 0]
    assert gpus[1].link_status == ["up", "up", "up", "down", "up", "up", "up", "disabled"]
    assert gpus[3].link_status[-1] == "disabled"


# --------------------------------------------------------------------------- odd input


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize(
    "text",
    [
        "",
        " \n",
        "\x00\ufffd",
        "GPU: 99999999999999999999",
        "GPU: -3\n    ASIC:\n",
        "[" * 5000,
        "{" * 5000,
        '{"gpu_data": 5}',
        '[{"gpu": 1e999}]',
        '[{"gpu": "x"}, 7, null]',
        '[{"gpu": 0, "usage": {"gfx_activity": {"value": 1e999}}, "links": [1, {"gpu": -1}]}]',
        '[{"gpu": 0, "mem_usage": {"total_vram": {"value": 1e300, "unit": "TB"}}}]',
        "WEIGHT TABLE:\nGPU0 GPU1\nGPU0 0\nGPU77777777777 1 2 3\n",
        "LINK METRIC TABLE:\nRead 1 KB\n",
    ],
)
def test_odd_input_gives_parsed_not_exception(parser, text: str) -> None:
    assert isinstance(parser(text), Parsed)


def test_empty_input_warns() -> None:
    for parser in PARSERS:
        parsed = parser("")
        assert parsed.warnings, parser.__name__


# --------------------------------------------------------------------------- damaged input

SAMPLES = mutations.sample_params(REAL_FILES, OWN_FILES)
JSON_SAMPLES = [s for s in SAMPLES if s.id.endswith(".json")]


def test_own_samples_exist() -> None:
    assert len(OWN_FILES) >= 7


@pytest.mark.parametrize("path", SAMPLES)
def test_mutated_samples_never_raise(path: Path) -> None:
    mutations.assert_parsers_never_raise(PARSERS, path)


@pytest.mark.parametrize("path", JSON_SAMPLES)
def test_restructured_json_never_raises(path: Path) -> None:
    mutations.assert_parsers_never_raise(PARSERS, path, damage=mutations.mutated_json)


def test_long_damaged_lines_stay_fast() -> None:
    mutations.assert_long_lines_stay_fast(PARSERS, mutations.LONG_LINES, 5.0)
