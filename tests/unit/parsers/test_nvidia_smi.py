"""nvidia-smi topo -m and --query-gpu CSV parsers: real H200 outputs (read in place), samples."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from collscope.parsers.common import LINK_TYPES, GpuInfo, Parsed
from collscope.parsers.nvidia_smi import NvidiaTopo, parse_query_gpu_csv, parse_topo_matrix
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.unit.parsers import mutations

OWN = OWN_FIXTURES / "tool-outputs"
MIB = 1024 * 1024


# --- topo -m ----------------------------------------------------------------------------------


def test_topo_h200_8gpu_8nic() -> None:
    text = fixture_path("tool-outputs", "nvidia-smi_topo_m_h200_8gpu_8nic.txt").read_text()
    parsed = parse_topo_matrix(text)
    assert parsed.warnings == []
    topo = parsed.value
    t = topo.topology
    assert t.gpus == 8
    for g in range(8):
        assert t.link_type[g][g] == "self"
        for h in range(8):
            if h != g:
                assert t.link_type[g][h] == "nvlink"
                assert t.weight[g][h] == 18  # NV18: 18 bonded NVLinks
    assert t.extra["raw"][0][1] == "NV18"
    assert t.extra["raw"][3][3] == "X"
    assert t.numa_node == [0, 0, 0, 0, 1, 1, 1, 1]
    assert topo.cpu_affinity[0] == "0-63,128-191"
    assert topo.cpu_affinity[7] == "64-127,192-255"
    assert topo.gpu_numa_id == [None] * 8  # "N/A"

    assert topo.nics == [f"NIC{i}" for i in range(8)]
    assert topo.nic_names["NIC0"] == "mlx5_0" and topo.nic_names["NIC7"] == "mlx5_7"
    # GPU0's row: NODE NODE SYS NODE PIX SYS SYS SYS
    assert topo.gpu_nic[0] == ["node", "node", "sys", "node", "pix", "sys", "sys", "sys"]
    assert topo.gpu_nic[2][0] == "pix"  # GPU2 <-> NIC0 (mlx5_0)
    assert topo.gpu_nic[4][6] == "pix"
    # the NIC next to each GPU (one PIX NIC per GPU on this board)
    assert [topo.nics_near(g) for g in range(8)] == [
        ["mlx5_4"], ["mlx5_1"], ["mlx5_0"], ["mlx5_3"],
        ["mlx5_6"], ["mlx5_7"], ["mlx5_5"], ["mlx5_2"]]
    assert topo.nic_nic[0][0] == "self"
    assert topo.nic_nic[0][2] == "sys"
    assert topo.nic_nic[2][5] == "node"


def test_topo_space_aligned_with_ansi_and_named_nic_columns() -> None:
    parsed = parse_topo_matrix(
        (OWN / "nvidia-smi_topo_m_4gpu_2nic_spaces_ansi_sample.txt").read_text())
    assert parsed.warnings == []
    topo = parsed.value
    t = topo.topology
    assert t.gpus == 4
    assert t.link_type[0] == ["self", "nvlink", "nvlink", "nvlink"]
    assert t.weight[0] == [None, 1, 1, 2]
    assert t.weight[2][1] == 2
    assert t.numa_node == [0, 0, 1, 1]
    assert topo.nics == ["mlx5_0", "mlx5_1"]  # older layout: NICs named in the header
    assert topo.nic_names == {}
    assert topo.gpu_nic[0] == ["pix", "sys"]
    assert topo.gpu_nic[3] == ["sys", "pxb"]
    assert topo.nics_near(2) == ["mlx5_1"]
    assert topo.nic_nic == [["self", "sys"], ["sys", "self"]]
    assert topo.cpu_affinity == ["0-19,40-59", "0-19,40-59", "20-39,60-79", "20-39,60-79"]


def test_topo_pcie_only_with_gpu_numa_id_and_soc() -> None:
    parsed = parse_topo_matrix(
        (OWN / "nvidia-smi_topo_m_4gpu_pcie_numa_id_sample.txt").read_text())
    assert parsed.warnings == []
    topo = parsed.value
    t = topo.topology
    assert t.link_type[0] == ["self", "pxb", "sys", "sys"]  # SOC is the old name of SYS
    assert t.link_type[2][3] == "phb"
    assert t.weight[0] == [None, None, None, None]
    assert topo.nics == [] and topo.gpu_nic == [[], [], [], []]
    assert t.numa_node == [0, 0, 1, 1]
    assert topo.gpu_numa_id == [2, 3, None, None]
    assert topo.nics_near(0) == []


def test_topo_header_without_indentation() -> None:
    text = "GPU0 NIC0 CPU Affinity NUMA Affinity\nGPU0 X PHB 0-7 0\nNIC0 PHB X\n"
    parsed = parse_topo_matrix(text)
    assert parsed.warnings == []
    topo = parsed.value
    assert topo.topology.link_type == [["self"]]
    assert topo.gpu_nic == [["phb"]] and topo.nics == ["NIC0"]
    assert topo.cpu_affinity == ["0-7"] and topo.topology.numa_node == [0]


def test_topo_unknown_codes_and_short_rows_warn() -> None:
    text = "\tGPU0\tGPU1\nGPU0\t X \tZZZ\nGPU1\tNV4\n"
    parsed = parse_topo_matrix(text)
    t = parsed.value.topology
    assert t.link_type == [["self", "unknown"], ["nvlink", "unknown"]]
    assert t.weight[1][0] == 4
    assert any("ZZZ" in w for w in parsed.warnings)
    assert any("GPU1" in w for w in parsed.warnings)
    assert all(link in LINK_TYPES for row in t.link_type for link in row)


def test_topo_without_header_warns() -> None:
    parsed = parse_topo_matrix("NVIDIA-SMI has failed because it couldn't communicate\n")
    assert parsed.value.topology.gpus == 0
    assert parsed.warnings


# --- --query-gpu CSV --------------------------------------------------------------------------


def test_query_gpu_h200() -> None:
    text = fixture_path("tool-outputs", "nvidia-smi_query-gpu_csv_h200_8gpu.txt").read_text()
    parsed = parse_query_gpu_csv(text)
    assert parsed.warnings == []
    gpus = parsed.value
    assert [g.index for g in gpus] == list(range(8))
    for gpu in gpus:
        assert gpu.name == "NVIDIA H200"
        assert gpu.memory_bytes == 143771 * MIB
        assert gpu.driver_version == "570.211.01"
        assert gpu.extra == {"power.limit": "700.00 W", "pstate": "P0"}
        assert gpu.memory_used_bytes is None  # not queried


def test_query_gpu_full_sample_maps_fields_and_absent_values() -> None:
    parsed = parse_query_gpu_csv(
        (OWN / "nvidia-smi_query-gpu_csv_a100_full_sample.txt").read_text())
    assert parsed.warnings == []
    first, second, third = parsed.value
    assert first.pci_bus_id == "00000000:07:00.0"
    assert first.uuid == "GPU-3b1f6c0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
    assert first.serial == "1561221000001"
    assert first.vbios == "92.00.36.00.01"
    assert first.memory_bytes == 81920 * MIB
    assert first.memory_used_bytes == 4 * MIB
    assert first.extra == {"utilization.gpu": "0 %", "temperature.gpu": "31"}
    # "[N/A]" and "[Not Supported]" are absent values, never 0
    assert second.serial is None and second.vbios is None
    assert second.memory_used_bytes is None
    assert "utilization.gpu" not in second.extra
    assert third.memory_used_bytes == 40536 * MIB
    assert third.extra["utilization.gpu"] == "97 %"


def test_query_gpu_nounits_uses_header_units() -> None:
    parsed = parse_query_gpu_csv(
        (OWN / "nvidia-smi_query-gpu_csv_t4_nounits_sample.txt").read_text())
    assert parsed.warnings == []
    t4a, t4b = parsed.value
    assert t4a.memory_bytes == 15360 * MIB
    assert t4a.memory_used_bytes == 0  # a real zero stays zero
    assert t4b.memory_used_bytes == 1024 * MIB
    assert t4a.extra == {"power.draw": "9.87 W", "utilization.gpu": "0 %"}
    assert t4b.extra == {}


def test_query_gpu_noheader_needs_fields() -> None:
    text = "3, NVIDIA H100 80GB HBM3, 81559 MiB\n"
    assert parse_query_gpu_csv(text).value == []
    assert parse_query_gpu_csv(text).warnings
    parsed = parse_query_gpu_csv(text, fields=["index", "name", "memory.total"])
    assert parsed.warnings == []
    assert parsed.value == [GpuInfo(index=3, name="NVIDIA H100 80GB HBM3",
                                    memory_bytes=81559 * MIB)]


def test_query_gpu_ragged_rows_skipped_with_warning() -> None:
    # A row with another number of values, or a non-numeric index, is not a GPU (the rest of
    # a file holding several outputs): skipped and counted, never read as a GPU.
    parsed = parse_query_gpu_csv("index, name\n0, A, extra\nx, B\n1, C\n")
    assert [(g.index, g.name) for g in parsed.value] == [(1, "C")]
    assert parsed.warnings == ["2 row(s) skipped: not 2 values with a numeric index "
                               "(not GPU rows)"]


# --- robustness -------------------------------------------------------------------------------

SAMPLES = mutations.sample_params(
    ["nvidia-smi_topo_m_h200_8gpu_8nic.txt", "nvidia-smi_query-gpu_csv_h200_8gpu.txt"],
    ["nvidia-smi_topo_m_4gpu_2nic_spaces_ansi_sample.txt",
     "nvidia-smi_topo_m_4gpu_pcie_numa_id_sample.txt",
     "nvidia-smi_query-gpu_csv_a100_full_sample.txt",
     "nvidia-smi_query-gpu_csv_t4_nounits_sample.txt"],
)
PARSERS = [parse_topo_matrix, parse_query_gpu_csv,
           partial(parse_query_gpu_csv, fields=["index", "name", "memory.total [MiB]"])]


def _check(parser: object, result: Parsed[Any]) -> None:
    if parser is parse_topo_matrix:
        assert isinstance(result.value, NvidiaTopo)
        t = result.value.topology
        assert len(t.link_type) == t.gpus == len(t.weight) == len(t.numa_node)
        assert all(len(row) == t.gpus for row in t.link_type)
        assert all(link in LINK_TYPES for row in t.link_type for link in row)
    else:
        assert isinstance(result.value, list)
        assert all(isinstance(g, GpuInfo) for g in result.value)


@pytest.mark.parametrize("path", SAMPLES)
def test_mutated_samples_never_raise(path: Path) -> None:
    mutations.assert_parsers_never_raise(PARSERS, path, check=_check)


def test_arbitrary_text_never_raises() -> None:
    mutations.assert_parsers_never_raise(PARSERS, st.text(), check=_check, max_examples=80)


@pytest.mark.parametrize("text", [
    "\tGPU0\tGPU1\nGPU0" + "\t X" * 50_000,
    "index, name [" + " " * 100_000 + "x\n0, a\n",
    "index, memory.total [MiB]\n0, " + "1" * 100_000 + " x\n",
])
def test_long_lines_stay_linear(text: str) -> None:
    mutations.assert_long_lines_stay_fast(PARSERS, [text], 2.0)
