"""The one topology reader doctor and links share, on real tool outputs."""

from __future__ import annotations

from collscope.hw.topology import capture_vendor, read_topology
from tests.conftest import fixture_path


def _text(name: str) -> str:
    return fixture_path("tool-outputs", name).read_text()


def test_nvidia_smi_topo_m_gives_the_matrix_and_each_gpus_nearest_nic():
    found = read_topology({"nvidia-smi-topo-m.txt": _text("nvidia-smi_topo_m_h200_8gpu_8nic.txt")},
                          "nvidia")
    assert found.source == "nvidia-smi-topo-m.txt" and found.topology is not None
    assert found.topology.gpus == 8 and found.topology.link_type[0][:2] == ["self", "nvlink"]
    assert found.nearest_nics[0] == ["mlx5_4"] and found.nic_link[0] == "pix"


def test_the_vendors_outputs_are_read_and_the_others_not():
    capture = {"amd-smi-topology.txt": _text("amd-smi_topology_mi300x_8gpu_rocm61.txt"),
               "nvidia-smi-topo-m.txt": _text("nvidia-smi_topo_m_h200_8gpu_8nic.txt")}
    assert capture_vendor(capture) == "amd"
    found = read_topology(capture, "amd")
    assert found.source == "amd-smi-topology.txt" and found.topology.link_type[0][1] == "xgmi"
    assert found.nearest_nics == {}                       # nvidia-smi's columns not read
    assert capture_vendor({}) == "none" and read_topology({}, "none").topology is None
