"""rocm-smi parsers against real outputs (tests/fixtures) and our own samples.

Files under tests/fixtures/tool-outputs/rocm-smi_*_own_* are our own text, shaped like the
tool's output for layouts the real captures do not cover (ROCm 5 and 6.1 concise tables, newer
product-name keys, mixed XGMI/PCIe topologies, --showmeminfo all, --showtopo --json).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from collscope.parsers import rocm_smi
from collscope.parsers.common import Parsed, Topology
from tests.conftest import OWN_FIXTURES
from tests.unit.parsers import mutations
from tests.unit.parsers.mutations import own, real

OWN = OWN_FIXTURES / "tool-outputs"
REAL_FILES = [
    "rocm-smi_showtopo_mi308x_8gpu.txt",
    "rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt",
    "rocm-smi_productinfo_section_mi300x_4gpu_sriov.txt",
    "rocm-smi_json_allinfo_mi100_4gpu_rocm602.json",
]
OWN_FILES = sorted(p.name for p in OWN.glob("rocm-smi_*"))
PARSERS: list[Callable[[str], Parsed[Any]]] = [
    rocm_smi.parse_productname,
    rocm_smi.parse_showtopo,
    rocm_smi.parse_showmeminfo,
    rocm_smi.parse_showuse,
    rocm_smi.parse_concise,
    rocm_smi.parse_json,
    rocm_smi.parse_json_status,
    rocm_smi.parse_json_topology,
]


def off_diagonal(matrix: list[list]) -> set:
    return {v for i, row in enumerate(matrix) for j, v in enumerate(row) if i != j}


# --------------------------------------------------------------------------- real outputs


def test_showtopo_mi308x_all_xgmi_weight_15_two_numa_nodes() -> None:
    parsed = rocm_smi.parse_showtopo(real("rocm-smi_showtopo_mi308x_8gpu.txt"))
    topo = parsed.value
    assert parsed.warnings == []
    assert topo.gpus == 8
    assert [row[i] for i, row in enumerate(topo.link_type)] == ["self"] * 8
    assert off_diagonal(topo.link_type) == {"xgmi"}
    assert topo.link_type[0][7] == "xgmi" and topo.link_type[5][2] == "xgmi"
    assert off_diagonal(topo.weight) == {15}
    assert topo.weight[3][3] == 0 and topo.weight[6][1] == 15
    # rocm-smi says 1 hop for every xGMI pair; kept as printed.
    assert off_diagonal(topo.hops) == {1}
    assert topo.hops[4][4] == 0
    assert topo.numa_node == [0, 0, 0, 0, 1, 1, 1, 1]
    assert topo.extra["numa_affinity"] == [["0"]] * 4 + [["1"]] * 4


def test_concise_mi308x_rows() -> None:
    parsed = rocm_smi.parse_concise(
        real("rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt")
    )
    rows = parsed.value
    assert parsed.warnings == []
    assert [r.index for r in rows] == list(range(8))
    assert [r.node_id for r in rows] == list(range(2, 10))
    first = rows[0]
    assert first.device_id == "0x74a2" and first.guid == "1017"
    assert first.temperature_c == 43.0 and first.temperature_sensor == "junction"
    assert first.power_w == 155.0 and first.power_cap_w == 650.0
    assert first.partitions == "NPS1, SPX, 0"
    assert (first.sclk_mhz, first.mclk_mhz) == (94.0, 900.0)
    assert (first.fan_percent, first.perf_level) == (0.0, "auto")
    assert (first.vram_percent, first.gpu_percent) == (0.0, 0.0)
    assert [r.guid for r in rows] == [
        "1017",
        "47713",
        "37449",
        "11217",
        "41880",
        "6656",
        "12840",
        "35760",
    ]
    assert [r.power_w for r in rows] == [155.0, 155.0, 159.0, 155.0, 160.0, 157.0, 160.0, 158.0]
    assert [r.temperature_c for r in rows] == [43.0, 41.0, 45.0, 41.0, 44.0, 42.0, 45.0, 43.0]
    assert rows[7].sclk_mhz == 107.0
    assert {r.power_cap_w for r in rows} == {650.0}


def test_showmeminfo_mi308x_vram() -> None:
    parsed = rocm_smi.parse_showmeminfo(
        real("rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt")
    )
    gpus = parsed.value
    assert parsed.warnings == []
    assert len(gpus) == 8
    assert {g.memory_bytes for g in gpus} == {206141652992}
    assert gpus[0].memory_used_bytes == 297611264
    assert [g.memory_used_bytes for g in gpus[1:]] == [297623552] * 7


def test_showuse_mi308x_busy_percent_and_activity_counter() -> None:
    parsed = rocm_smi.parse_showuse(
        real("rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt")
    )
    assert parsed.warnings == []
    assert [s.gpu_percent for s in parsed.value] == [0.0] * 8
    assert parsed.value[0].extra["gfx_activity"] == "3862538534"
    assert parsed.value[7].extra["gfx_activity"] == "2145209382"


def test_productinfo_mi300x_sriov() -> None:
    parsed = rocm_smi.parse_productname(real("rocm-smi_productinfo_section_mi300x_4gpu_sriov.txt"))
    gpus = parsed.value
    assert parsed.warnings == []
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert {g.name for g in gpus} == {"AMD Instinct MI300X OAM"}
    assert gpus[2].extra == {
        "card_model": "0x74a1",
        "card_vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
        "card_sku": "MI3SRIOV",
    }


def test_json_allinfo_mi100_gpu_info() -> None:
    parsed = rocm_smi.parse_json(real("rocm-smi_json_allinfo_mi100_4gpu_rocm602.json"))
    gpus = parsed.value
    assert parsed.warnings == []
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert {g.name for g in gpus} == {"Arcturus GL-XL [Instinct MI100]"}
    assert [g.pci_bus_id for g in gpus] == [
        "0000:83:00.0",
        "0000:A3:00.0",
        "0000:C3:00.0",
        "0000:E3:00.0",
    ]
    assert {g.memory_bytes for g in gpus} == {34342961152}
    assert {g.memory_used_bytes for g in gpus} == {6750208}
    assert {g.driver_version for g in gpus} == {"6.3.6"}  # from the 'system' object
    assert {g.vbios for g in gpus} == {"113-D3431401-101"}
    assert {g.numa_node for g in gpus} == {1}
    assert gpus[0].uuid == "0x79ccd55167a2124a"
    assert gpus[0].serial is None  # printed as N/A
    assert gpus[0].extra["device_id"] == "0x738c"
    assert gpus[0].extra["card_sku"] == "D3431401"
    assert gpus[3].extra["voltage_mv"] == "662"
    # the flattened clock-level lists ('0': '16.0GT/s x16 *') are dropped
    assert not any(key.isdigit() for key in gpus[0].extra)


def test_json_allinfo_mi100_status() -> None:
    parsed = rocm_smi.parse_json_status(real("rocm-smi_json_allinfo_mi100_4gpu_rocm602.json"))
    rows = parsed.value
    assert parsed.warnings == []
    assert rows[0].temperature_c == 55.0 and rows[0].temperature_sensor == "junction"
    assert [r.power_w for r in rows] == [36.0, 44.0, 43.0, 39.0]
    assert {r.power_cap_w for r in rows} == {290.0}
    assert (rows[0].sclk_mhz, rows[0].mclk_mhz) == (300.0, 1200.0)
    assert rows[0].gpu_percent == 0.0 and rows[0].perf_level == "auto"
    assert rows[0].device_id == "0x738c"


def test_json_allinfo_mi100_topology_pcie_weight_40_hops_2() -> None:
    parsed = rocm_smi.parse_json_topology(real("rocm-smi_json_allinfo_mi100_4gpu_rocm602.json"))
    topo = parsed.value
    assert parsed.warnings == []
    assert topo.gpus == 4
    assert off_diagonal(topo.link_type) == {"pcie"}
    assert off_diagonal(topo.weight) == {40} and off_diagonal(topo.hops) == {2}
    assert topo.weight[2][2] == 0 and topo.link_type[1][1] == "self"
    assert topo.numa_node == [1, 1, 1, 1]


# --------------------------------------------------------------------------- own samples


def test_showtopo_mixed_xgmi_pairs_over_pcie() -> None:
    parsed = rocm_smi.parse_showtopo(own("rocm-smi_showtopo_own_4gpu_mixed.txt"))
    topo = parsed.value
    assert parsed.warnings == []
    assert topo.link_type[0][1] == "xgmi" and topo.link_type[2][3] == "xgmi"
    assert topo.link_type[1][2] == "pcie" and topo.link_type[3][0] == "pcie"
    assert topo.weight[0][2] == 72 and topo.hops[0][2] == 3
    assert topo.numa_node == [0, 0, 1, -1]


def test_concise_rocm61_layout_name_under_row() -> None:
    parsed = rocm_smi.parse_concise(own("rocm-smi_concise_own_rocm61_2gpu.txt"))
    first, second = parsed.value
    assert parsed.warnings == []
    assert first.device_id == "0x74a1" and first.extra["revision"] == "0x00"
    assert first.name == "AMD Instinct MI300X"
    assert first.fan_percent is None  # N/A
    assert (first.perf_level, first.gpu_percent, first.vram_percent) == ("manual", 88.0, 37.0)
    assert first.partitions == "NPS1, SPX"
    assert second.power_w == 141.0 and second.temperature_sensor == "junction"


def test_concise_rocm5_layout_and_misaligned_row() -> None:
    parsed = rocm_smi.parse_concise(own("rocm-smi_concise_own_rocm57_2gpu.txt"))
    first, second = parsed.value
    assert first.temperature_sensor == "dieedge" and first.temperature_c == 34.0
    assert (first.power_w, first.power_cap_w, first.vram_percent) == (39.0, 290.0, 1.0)
    # the second row lost a column gap; values are still placed, with a warning
    assert len(parsed.warnings) == 1 and "line 5" in parsed.warnings[0]
    assert (second.sclk_mhz, second.mclk_mhz) == (1472.0, 1200.0)
    assert (second.power_w, second.power_cap_w) == (251.0, 290.0)
    assert (second.fan_percent, second.vram_percent, second.gpu_percent) == (0.0, 64.0, 99.0)


def test_productname_newer_keys() -> None:
    gpus = rocm_smi.parse_productname(own("rocm-smi_showproductname_own_2gpu.txt")).value
    assert gpus[1].name == "AMD Instinct MI325X"
    assert gpus[1].extra["gfx_version"] == "gfx942"
    assert gpus[1].extra["node_id"] == "3" and gpus[0].extra["guid"] == "28851"


def test_showmeminfo_all_keeps_other_kinds_and_na() -> None:
    parsed = rocm_smi.parse_showmeminfo(own("rocm-smi_showmeminfo_all_own_2gpu.txt"))
    first, second = parsed.value
    assert first.memory_bytes == 68702699520 and first.memory_used_bytes == 10737418240
    assert first.extra["gtt_total_memory_b"] == "270582939648"
    assert second.memory_used_bytes is None and parsed.warnings == []


def test_json_topology_after_warning_line() -> None:
    parsed = rocm_smi.parse_json_topology(own("rocm-smi_json_showtopo_own_2gpu.json"))
    assert parsed.warnings == []
    assert parsed.value.link_type == [["self", "xgmi"], ["xgmi", "self"]]
    assert parsed.value.weight == [[0, 15], [15, 0]]
    assert parsed.value.numa_node == [0, 1]


# --------------------------------------------------------------------------- odd input


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n",
        "garbage\x00\xff",
        "GPU[99999999999999] : Card series: X",
        "{",
        "[1, 2]",
        "{" * 5000,
        '{"card0": 5}',
        "=== Weight ===\nGPU0 GPU1\nGPU0 0 x y z\nGPU999999999 1",
    ],
)
def test_odd_input_gives_parsed_not_exception(parser, text: str) -> None:
    result = parser(text)
    assert isinstance(result, Parsed)


def test_empty_topology_is_empty_with_warnings() -> None:
    parsed = rocm_smi.parse_showtopo("")
    assert parsed.value == Topology(gpus=0)
    assert parsed.warnings


def test_unknown_link_type_is_reported() -> None:
    text = "=== Link Type between two GPUs ===\n GPU0 GPU1\nGPU0 0 WARP\nGPU1 WARP 0\n"
    parsed = rocm_smi.parse_showtopo(text)
    assert parsed.value.link_type == [["self", "unknown"], ["unknown", "self"]]
    assert any("WARP" in w for w in parsed.warnings)


# --------------------------------------------------------------------------- damaged input

SAMPLES = mutations.sample_params(REAL_FILES, OWN_FILES)
JSON_SAMPLES = [s for s in SAMPLES if s.id.endswith(".json")]


def test_own_samples_exist() -> None:
    assert len(OWN_FILES) >= 6
    assert all(isinstance(p, Path) for p in OWN.glob("rocm-smi_*"))


@pytest.mark.parametrize("path", JSON_SAMPLES)
def test_restructured_json_never_raises(path: Path) -> None:
    mutations.assert_parsers_never_raise(PARSERS, path, damage=mutations.mutated_json)


@pytest.mark.parametrize("path", SAMPLES)
def test_mutated_samples_never_raise(path: Path) -> None:
    mutations.assert_parsers_never_raise(PARSERS, path)


def test_long_damaged_lines_stay_fast() -> None:
    mutations.assert_long_lines_stay_fast(PARSERS, mutations.LONG_LINES, 5.0)
