"""rocminfo parser against a real output (tests/fixtures) and our own sample.

tests/fixtures/tool-outputs/rocminfo_own_2gpu_mi250x.txt is our own text, shaped like rocminfo
on an MI250X node: newer 'ROCk module is loaded' banner, trailing blanks, two GPU agents.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from collscope.parsers import rocminfo
from collscope.parsers.common import Parsed
from tests.conftest import OWN_FIXTURES
from tests.unit.parsers import mutations
from tests.unit.parsers.mutations import own, real

OWN = OWN_FIXTURES / "tool-outputs"
REAL_FILES = ["rocminfo_mi300x_excerpt_agents1-3.txt"]
OWN_FILES = sorted(p.name for p in OWN.glob("rocminfo_*"))
PARSERS: list[Callable[[str], Parsed[Any]]] = [rocminfo.parse_rocminfo, rocminfo.parse_gpus]


def test_mi300x_versions_and_system() -> None:
    parsed = rocminfo.parse_rocminfo(real("rocminfo_mi300x_excerpt_agents1-3.txt"))
    info = parsed.value
    assert parsed.warnings == []
    assert info.kernel_module_version == "6.8.5"
    assert (info.runtime_version, info.runtime_ext_version) == ("1.14", "1.6")
    assert info.system["Machine Model"] == "LARGE"
    assert info.system["DMAbuf Support"] == "YES"


def test_mi300x_cpu_agents() -> None:
    info = rocminfo.parse_rocminfo(real("rocminfo_mi300x_excerpt_agents1-3.txt")).value
    assert [a.number for a in info.agents] == [1, 2, 3]
    cpus = [a for a in info.agents if a.device_type == "CPU"]
    assert [c.name for c in cpus] == ["Intel(R) Xeon(R) Platinum 8470"] * 2
    assert [c.node for c in cpus] == [0, 1]
    assert {c.compute_units for c in cpus} == {104}
    assert cpus[0].pools[0].size_bytes == 1056364836 * 1024
    assert cpus[1].pools[2].segment == "GLOBAL; FLAGS: COARSE GRAINED"
    assert cpus[0].pci_bdf is None and not cpus[0].is_gpu


def test_mi300x_gpu_agent() -> None:
    info = rocminfo.parse_rocminfo(real("rocminfo_mi300x_excerpt_agents1-3.txt")).value
    (gpu,) = info.gpus
    assert gpu.number == 3 and gpu.name == "gfx942"
    assert gpu.marketing_name == "AMD Instinct MI300X" and gpu.vendor_name == "AMD"
    assert gpu.uuid == "GPU-07386a321fa45d1e"
    assert gpu.node == 2 and gpu.compute_units == 304 and gpu.simds_per_cu == 4
    assert gpu.chip_id == 0x74A1 and gpu.wavefront_size == 64
    assert gpu.max_clock_mhz == 2100
    assert gpu.bdf_id == 6912 and gpu.pci_bdf == "1b:00.0"
    assert gpu.cache_kb == {"L1": 32, "L2": 4096, "L3": 262144}
    assert [p.segment for p in gpu.pools] == [
        "GLOBAL; FLAGS: COARSE GRAINED",
        "GLOBAL; FLAGS: EXTENDED FINE GRAINED",
        "GLOBAL; FLAGS: FINE GRAINED",
        "GROUP",
    ]
    assert gpu.pools[0].size_bytes == 201310208 * 1024 == 206141652992
    assert gpu.pools[0].allocatable is True and gpu.pools[0].accessible_by_all is False
    assert gpu.pools[3].size_bytes == 64 * 1024 and gpu.pools[3].allocatable is False
    assert gpu.isas == ["amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"]
    assert gpu.extra["Packet Processor uCode"] == "150"  # 'Key:: value' form
    assert gpu.extra["WatchPts on Addr. Ranges"] == "4"  # 'Key:value' form


def test_mi300x_as_gpu_info() -> None:
    parsed = rocminfo.parse_gpus(real("rocminfo_mi300x_excerpt_agents1-3.txt"))
    (gpu,) = parsed.value
    assert gpu.index == 0 and gpu.name == "AMD Instinct MI300X"
    assert gpu.uuid == "GPU-07386a321fa45d1e"
    assert gpu.memory_bytes == 206141652992
    assert gpu.extra == {
        "gfx_target": "gfx942",
        "compute_units": "304",
        "hsa_node": "2",
        "pci_bdf": "1b:00.0",
    }


def test_own_mi250x_two_gpus() -> None:
    parsed = rocminfo.parse_rocminfo(own("rocminfo_own_2gpu_mi250x.txt"))
    info = parsed.value
    assert parsed.warnings == []
    assert info.kernel_module_version is None  # 'ROCk module is loaded' carries no version
    assert info.runtime_version == "1.1" and info.runtime_ext_version is None
    assert [g.node for g in info.gpus] == [4, 5]
    assert [g.pci_bdf for g in info.gpus] == ["c1:00.0", "c2:00.0"]
    assert {g.name for g in info.gpus} == {"gfx90a"}
    assert info.gpus[0].cache_kb == {"L1": 16, "L2": 8192}
    assert info.gpus[1].wavefront_size is None
    gpus = rocminfo.parse_gpus(own("rocminfo_own_2gpu_mi250x.txt")).value
    assert [g.memory_bytes for g in gpus] == [68702699520] * 2


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "\x00",
        "Agent 99999999999999999999\n  Name: x",
        "Agent 1\nPool 1\n  Size: 9",
        "  Name:\n  :\n:::\nISA 1\n",
        "Agent 1\n  BDFID: 99999999999\n  Size: 1e999 KB",
        "Agent 1\n  Device Type: GPU\n  BDFID: -5\n",
    ],
)
def test_odd_input_gives_parsed_not_exception(parser, text: str) -> None:
    result = parser(text)
    assert isinstance(result, Parsed)
    if parser is rocminfo.parse_gpus:
        for gpu in result.value:
            assert gpu.extra.get("pci_bdf") is None or re.fullmatch(
                r"[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", gpu.extra["pci_bdf"]
            )


def test_empty_input_warns() -> None:
    parsed = rocminfo.parse_rocminfo("")
    assert parsed.value.agents == [] and len(parsed.warnings) == 2


# --------------------------------------------------------------------------- damaged input


@pytest.mark.parametrize("path", mutations.sample_params(REAL_FILES, OWN_FILES))
def test_mutated_samples_never_raise(path: Path) -> None:
    mutations.assert_parsers_never_raise(PARSERS, path, max_examples=80)


def test_long_damaged_lines_stay_fast() -> None:
    mutations.assert_long_lines_stay_fast(PARSERS, mutations.LONG_LINES, 5.0)
