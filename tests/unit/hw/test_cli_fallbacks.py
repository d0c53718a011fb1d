"""The command-line fallbacks doctor added to collscope.hw: amd-smi / rocm-smi / rocminfo and
nvidia-smi through the parsers, plus topology(). Tools are faked by a runner that answers
with real or own sample outputs."""

from __future__ import annotations

import time
from collections.abc import Sequence

from collscope.hw.amd import AmdCliBackend, cli_topology
from collscope.hw.nvidia import NvidiaSmiBackend, smi_topology
from collscope.hw.tools import tool_output
from tests.conftest import OWN_FIXTURES, fixture_path

OWN = OWN_FIXTURES / "tool-outputs"


def runner(answers: dict[tuple[str, ...], str]):
    calls: list[tuple[str, ...]] = []

    def run(argv: Sequence[str]) -> str | None:
        calls.append(tuple(argv))
        return answers.get(tuple(argv))

    run.calls = calls  # type: ignore[attr-defined]
    return run


def real(name: str) -> str:
    return fixture_path("tool-outputs", name).read_text()


def test_amd_smi_inventory_metrics_and_topology():
    backend = AmdCliBackend(runner({
        ("amd-smi", "static"): (OWN / "amd-smi_static_own_2gpu.json").read_text(),
        ("amd-smi", "metric"): (OWN / "amd-smi_metric_own_2gpu.json").read_text(),
        ("amd-smi", "topology"): real("amd-smi_topology_mi300x_8gpu_rocm61.txt"),
    }))
    assert backend.available()
    gpus = backend.inventory()
    assert [g.name for g in gpus] == ["AMD Instinct MI300X"] * 2
    assert gpus[0].memory_bytes == 196592 * 1024 * 1024 and gpus[0].driver_version == "6.8.5"
    first = backend.metrics()[0]
    assert (first.util_percent, first.mem_util_percent, first.power_w) == (97.0, 41.0, 688.0)
    assert first.temperature_c == 71.0 and first.mem_used_bytes == 150112 * 1024 * 1024
    assert first.pcie_bytes_per_s == 1184e6 / 8
    topo = backend.topology()
    assert topo.gpus == 8 and topo.link_type[0][7] == "xgmi" and topo.weight[0][7] == 15


def test_rocm_smi_then_rocminfo_when_amd_smi_is_missing():
    concise = real("rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt")
    run = runner({
        ("rocm-smi", "--showproductname"): (OWN / "rocm-smi_showproductname_own_2gpu.txt")
        .read_text(),
        ("rocm-smi", "--showmeminfo", "vram"): (OWN / "rocm-smi_showmeminfo_all_own_2gpu.txt")
        .read_text(),
        ("rocm-smi",): concise,
        ("rocm-smi", "--showtopo"): real("rocm-smi_showtopo_mi308x_8gpu.txt"),
    })
    backend = AmdCliBackend(run)
    gpus = backend.inventory()
    assert len(gpus) == 2 and all(g.name for g in gpus) and gpus[0].memory_bytes
    statuses = backend.metrics()
    assert len(statuses) == 8 and statuses[0].power_w == 155.0
    assert statuses[0].temperature_c == 43.0
    assert cli_topology(run).numa_node == [0, 0, 0, 0, 1, 1, 1, 1]
    rocminfo_only = AmdCliBackend(runner({("rocminfo",):
                                          real("rocminfo_mi300x_excerpt_agents1-3.txt")}))
    assert [g.name for g in rocminfo_only.inventory()] == ["AMD Instinct MI300X"]


def test_no_tools_means_not_available():
    assert not AmdCliBackend(runner({})).available()
    assert not NvidiaSmiBackend(runner({})).available()
    assert cli_topology(runner({})) is None and smi_topology(runner({})) is None


def test_nvidia_smi_inventory_metrics_and_topology():
    metrics_csv = ("index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
                   "memory.total [MiB], power.draw [W], temperature.gpu\n"
                   "0, 97 %, 40 %, 1024 MiB, 143771 MiB, 650.50 W, 55\n"
                   "1, [N/A], [N/A], 0 MiB, 143771 MiB, [N/A], 40\n")
    run = runner({
        ("nvidia-smi", "--query-gpu=index,name,memory.total,driver_version,pci.bus_id,uuid,"
                       "vbios_version", "--format=csv"):
            real("nvidia-smi_query-gpu_csv_h200_8gpu.txt"),
        ("nvidia-smi", "--query-gpu=index,utilization.gpu,utilization.memory,memory.used,"
                       "memory.total,power.draw,temperature.gpu", "--format=csv"): metrics_csv,
        ("nvidia-smi", "topo", "-m"): real("nvidia-smi_topo_m_h200_8gpu_8nic.txt"),
    })
    backend = NvidiaSmiBackend(run)
    assert backend.available() and len(backend.inventory()) == 8
    first, second = backend.metrics()
    assert (first.util_percent, first.mem_util_percent, first.power_w) == (97.0, 40.0, 650.5)
    assert first.mem_used_bytes == 1024 * 1024 * 1024 and first.temperature_c == 55.0
    assert second.util_percent is None and second.power_w is None     # absent, not 0
    topo = backend.topology()
    assert topo.gpus == 8 and topo.link_type[1][2] == "nvlink" and topo.weight[1][2] == 18


def test_tool_output_runs_without_a_shell_and_kills_hung_tools(tmp_path, monkeypatch):
    hung = tmp_path / "rocm-smi"
    hung.write_text("#!/bin/sh\nsleep 30 & sleep 30\n")
    hung.chmod(0o755)
    echo = tmp_path / "amd-smi"
    echo.write_text('#!/bin/sh\necho "$@"\n')
    echo.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    started = time.monotonic()
    assert tool_output(["rocm-smi"], timeout_s=0.5) is None
    assert time.monotonic() - started < 5
    assert tool_output(["amd-smi", "static; reboot"]) == "static; reboot\n"
    assert tool_output(["no-such-tool"]) is None
