"""rocminfo parser against a real output (../shared/fixtures, read in place) and our own sample.

tests/fixtures/tool-outputs/rocminfo_own_2gpu_mi250x.txt is our own text, shaped like rocminfo
on an MI250X node: newer 'ROCk module is loaded' banner, trailing blanks, two GPU agents.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collscope.parsers import rocminfo
from collscope.parsers.common import Parsed
from tests.conftest import OWN_FIXTURES, shared_fixture

OWN = OWN_FIXTURES / "tool-outputs"
REAL_FILES = ["rocminfo_mi300x_excerpt_agents1-3.txt"]
OWN_FILES = sorted(p.name for p in OWN.glob("rocminfo_*"))
PARSERS: list[Callable[[str], Parsed[Any]]] = [rocminfo.parse_rocminfo, rocminfo.parse_gpus]


def real(name: str) -> str:
    return shared_fixture("tool-outputs", name).read_text(encoding="utf-8")


def own(name: str) -> str:
    return (OWN / name).read_text(encoding="utf-8")


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


# --------------------------------------------------------------------------- mutations

_NUMBERS = re.compile(r"\d+(?:\.\d+)?")
_ODD_NUMBERS = ["N/A", "-1", "", "1e999", "nan", "0x", "9" * 40, "٣", "１２"]


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """The sample damaged the ways captured output gets damaged: lines lost, repeated or
    reordered, characters replaced (encoding slips, random unicode), numbers garbled, text
    inserted, output cut short."""
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(
            st.sampled_from(
                ["delete", "duplicate", "swap", "substitute", "insert", "truncate", "number"]
            )
        )
        if op == "truncate":
            joined = "".join(lines)
            lines = joined[: draw(st.integers(0, len(joined)))].splitlines(keepends=True)
        elif op == "insert":
            at = draw(st.integers(0, len(lines)))
            lines.insert(at, draw(st.text(max_size=60)) + draw(st.sampled_from(["\n", ""])))
        elif not lines:
            continue
        elif op == "delete":
            del lines[draw(st.integers(0, len(lines) - 1))]
        elif op == "duplicate":
            at = draw(st.integers(0, len(lines) - 1))
            lines.insert(at, lines[at])
        elif op == "swap":
            a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
        elif op == "substitute":
            at = draw(st.integers(0, len(lines) - 1))
            line = lines[at]
            if line:
                pos = draw(st.integers(0, len(line) - 1))
                lines[at] = line[:pos] + draw(st.characters()) + line[pos + 1 :]
        elif op == "number":
            at = draw(st.integers(0, len(lines) - 1))
            found = list(_NUMBERS.finditer(lines[at]))
            if found:
                match = found[draw(st.integers(0, len(found) - 1))]
                odd = draw(st.sampled_from(_ODD_NUMBERS))
                lines[at] = lines[at][: match.start()] + odd + lines[at][match.end() :]
    return "".join(lines)


SAMPLES = [("real", n) for n in REAL_FILES] + [("own", n) for n in OWN_FILES]


@pytest.mark.parametrize("kind,name", SAMPLES, ids=[n for _, n in SAMPLES])
def test_mutated_samples_never_raise(kind: str, name: str) -> None:
    text = real(name) if kind == "real" else own(name)

    @settings(
        max_examples=80,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mutated(text))
    def run(damaged: str) -> None:
        for parser in PARSERS:
            result = parser(damaged)
            assert isinstance(result, Parsed)
            assert isinstance(result.warnings, list)

    run()


# --------------------------------------------------------------------------- speed

LONG = 20_000
LONG_LINES = [
    "=" * LONG + "x",
    " " * LONG + "x",
    "1" * LONG,
    "a" + " " * LONG + ":",
    "  key: a" + " " * LONG + "b",
    "GPU0 " + "1" * LONG + " Gb/s",
    "GPU[" + "1" * LONG + "] : key: value",
    "GPU0 GPU" + "1" * LONG + "\nGPU" + "2" * LONG + " 1",
    "Temp GPU%\n0 " + "1  " * (LONG // 3),
]


def test_long_damaged_lines_stay_fast() -> None:
    """A regex that backtracks on long runs (a banner of '=' once took a minute for 2,000
    characters) turns damaged input into a hang; every parser must stay linear."""
    started = time.perf_counter()
    for text in LONG_LINES:
        for parser in PARSERS:
            assert isinstance(parser(text), Parsed)
    assert time.perf_counter() - started < 5.0
