"""The tables people paste most: ``nvidia-smi`` and bare ``amd-smi`` (boxed, two or three lines
per GPU, then a process list) and ``amd-smi monitor`` (one line per GPU under a header of
upper-case column names). Each becomes per-GPU usage: memory used and installed, engine busy
percent, power, temperature, and the processes holding GPU memory.

The boxed tables have changed little since nvidia-smi 418 (CUDA 10.1) and amd-smi 24.x (ROCm
6.2); values are found by their units inside the ``|`` cells (``1MiB / 143771MiB``,
``0%``, ``76W /  700W``, ``283/196592 MB``), not by column positions, so wider names or
columns do not matter. ``amd-smi monitor``'s columns are read by their header names, with a
number and its unit (``140 W``, ``35 °C``, ``283 MB``) taken as one value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from collscope.parsers.common import Parsed
from collscope.units import tool_bytes


@dataclass
class GpuUsage:
    """What one GPU is doing; None where the table does not say (never 0 for unknown)."""

    index: int
    name: str | None = None
    bus_id: str | None = None
    util_percent: float | None = None
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    power_w: float | None = None
    temperature_c: float | None = None


@dataclass
class GpuProcess:
    gpu: int
    pid: int
    name: str
    mem_bytes: int | None = None


@dataclass
class SmiTable:
    tool: str
    driver: str | None = None           # nvidia-smi "Driver Version", amd-smi "amdgpu version"
    gpus: list[GpuUsage] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    no_processes: bool = False          # the table says so (not merely absent)


def _driver(text: str, label: str) -> str | None:
    match = re.search(re.escape(label) + r":\s*(\d[\w.+-]*)", text[:3000])
    return match.group(1) if match else None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


# --------------------------------------------------------------------------- nvidia-smi

_NV_GPU = re.compile(r"^\|\s*(\d+)\s+(.+?)\s+(?:On|Off)\s*\|\s*([0-9A-Fa-f]+:[0-9A-Fa-f]{2}:"
                     r"[0-9A-Fa-f]{2}\.\d)")
_NV_MEM = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_NV_UTIL = re.compile(r"\|\s*(\d+)%\s+\S")
_NV_POWER = re.compile(r"(\d+(?:\.\d+)?)\s*W\s*/")
_NV_TEMP = re.compile(r"\|\s*(?:\d+%|N/A)\s+(\d+)C\b")
_NV_PROCESS = re.compile(r"^\|\s*(\d+)\s+(?:(?:N/A|\d+)\s+(?:N/A|\d+)\s+)?(\d+)\s+"
                         r"(?:C\+G|M\+C|C|G|M)\s+(.*?)\s+(\d+)\s*MiB\s*\|")


def looks_like_nvidia_smi(text: str) -> bool:
    return "NVIDIA-SMI" in text[:2000] and "Driver Version" in text[:2000]


def _read_processes(lines: list[str], table: SmiTable, pattern: re.Pattern[str],
                    process: Callable[[re.Match[str]], GpuProcess]) -> int:
    """The 'Processes:' section of a default table (nvidia-smi's and bare amd-smi's share its
    shape) read into ``table``; the index of its header (len(lines) without one)."""
    start = next((i for i, line in enumerate(lines) if "Processes:" in line), len(lines))
    for line in lines[start + 1:]:
        match = pattern.match(line)
        if match:
            table.processes.append(process(match))
        elif "No running processes" in line:
            table.no_processes = True
    return start


def parse_nvidia_smi(text: str) -> Parsed[SmiTable]:
    """nvidia-smi's default table."""
    table, warnings = SmiTable(tool="nvidia-smi", driver=_driver(text, "Driver Version")), []
    lines = text.splitlines()
    end = _read_processes(lines, table, _NV_PROCESS, lambda m: GpuProcess(
        int(m.group(1)), int(m.group(2)), m.group(3).strip(), int(m.group(4)) << 20))
    for number, line in enumerate(lines[:end], start=1):
        match = _NV_GPU.match(line)
        if not match:
            continue
        gpu = GpuUsage(index=int(match.group(1)), name=match.group(2).strip(),
                       bus_id=match.group(3))
        second = lines[number] if number < len(lines) else ""
        memory = _NV_MEM.search(second)
        if memory:
            gpu.mem_used_bytes = int(memory.group(1)) << 20
            gpu.mem_total_bytes = int(memory.group(2)) << 20
        else:
            warnings.append(f"line {number + 1}: GPU {gpu.index}: memory use not found")
        util = _NV_UTIL.search(second[memory.end():] if memory else second)
        gpu.util_percent = _float(util.group(1)) if util else None
        power = _NV_POWER.search(second)
        gpu.power_w = _float(power.group(1)) if power else None
        temp = _NV_TEMP.search("|" + second.lstrip("|"))
        gpu.temperature_c = _float(temp.group(1)) if temp else None
        table.gpus.append(gpu)
    return Parsed(value=table, warnings=warnings)


# --------------------------------------------------------------------------- bare amd-smi

_AMD_FIRST = re.compile(r"^\|\s*([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s+(.*?)\s*"
                        r"\|(.*)\|\s*$")
_AMD_SECOND = re.compile(r"^\|\s*(\d+)\b[^|]*\|(.*)\|\s*$")
_AMD_MEM = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B)\b", re.I)
_AMD_POWER = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*\d+(?:\.\d+)?\s*W\b")
_AMD_TEMP = re.compile(r"(\d+(?:\.\d+)?)\s*°?C\b")
_AMD_PCT = re.compile(r"^\s*(\d+(?:\.\d+)?|N/A)\s*%")
_AMD_PROCESS = re.compile(r"^\|\s*(\d+)\s+(\d+)\s+(\S+)\s+(?:[\d.]+\s*[KMGT]?i?B\s+)"
                          r"([\d.]+)\s*([KMGT]?i?B)\b", re.I)


def looks_like_amd_smi_table(text: str) -> bool:
    head = text[:3000]
    return "AMD-SMI" in head and ("GPU-Name" in head or "Mem-Usage" in head)


def parse_amd_smi_table(text: str) -> Parsed[SmiTable]:
    """Bare ``amd-smi`` (ROCm 6.2+): two lines per GPU, then the processes."""
    table, warnings = SmiTable(tool="amd-smi", driver=_driver(text, "amdgpu version")), []
    lines = text.splitlines()
    end = _read_processes(lines, table, _AMD_PROCESS, lambda m: GpuProcess(
        int(m.group(1)), int(m.group(2)), m.group(3), tool_bytes(m.group(4), m.group(5))))
    for number, line in enumerate(lines[:end], start=1):
        first = _AMD_FIRST.match(line)
        second = _AMD_SECOND.match(lines[number]) if first and number < len(lines) else None
        if not first or not second:
            continue
        gpu = GpuUsage(index=int(second.group(1)), name=first.group(2).strip() or None,
                       bus_id=first.group(1))
        top, bottom = first.group(3), second.group(2)
        util = _AMD_PCT.match(bottom)
        gpu.util_percent = _float(util.group(1)) if util else None
        memory = _AMD_MEM.search(bottom)
        if memory:
            gpu.mem_used_bytes = tool_bytes(memory.group(1), memory.group(3))
            gpu.mem_total_bytes = tool_bytes(memory.group(2), memory.group(3))
        else:
            warnings.append(f"line {number + 1}: GPU {gpu.index}: memory use not found")
        power = _AMD_POWER.search(top)
        gpu.power_w = _float(power.group(1)) if power else None
        temp = _AMD_TEMP.search(top)
        gpu.temperature_c = _float(temp.group(1)) if temp else None
        table.gpus.append(gpu)
    return Parsed(value=table, warnings=warnings)


# --------------------------------------------------------------------------- amd-smi monitor

_MONITOR_HEADER = re.compile(r"^\s*GPU\s+(?:[A-Z_%]+\s+)*(?:POWER|GFX_UTIL|GFX%|VRAM_USED|"
                             r"VRAM_USAGE)\b")
_VALUE = re.compile(r"(N/A|[-+]?\d+(?:\.\d+)?(?:/[-+]?\d+(?:\.\d+)?)?)"
                    r"(?:\s*(°C|C|W|%|[KMGT]i?B|MHz|GHz|[KMG]b/s|[KMG]B/s|GT/s)(?!\w))?|(\S+)")
_UTIL_NAMES = ("GFX_UTIL", "GFX%", "GFX_UTIL%")
_USED_NAMES = ("VRAM_USED", "VRAM_USAGE")
_TEMP_NAMES = ("GPU_TEMP", "GPU_T", "HOTSPOT_TEMP", "HOTSPOT_T")


def looks_like_amd_smi_monitor(text: str) -> bool:
    return any(_MONITOR_HEADER.match(line) for line in text.splitlines()[:20])


def _monitor_values(line: str) -> list[tuple[str, str]]:
    """(number or N/A, unit) for each value of a data line, a number and its unit together."""
    return [(m.group(1) or m.group(3), m.group(2) or "") for m in _VALUE.finditer(line)]


def parse_amd_smi_monitor(text: str) -> Parsed[SmiTable]:
    table, warnings = SmiTable(tool="amd-smi monitor"), []
    header: list[str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if _MONITOR_HEADER.match(line):
            header = line.split()
            continue
        if header is None or not re.match(r"^\s*\d+\s", line):
            continue
        values = _monitor_values(line)
        if len(values) != len(header):
            warnings.append(f"line {number}: {len(values)} values under {len(header)} "
                            "columns; skipped")
            continue
        cells = dict(zip(header, values))
        gpu = GpuUsage(index=int(values[0][0]))
        util = next((cells[n] for n in _UTIL_NAMES if n in cells), None)
        gpu.util_percent = _float(util[0]) if util else None
        used = next((cells[n] for n in _USED_NAMES if n in cells), None)
        if used and used[0] != "N/A":
            amount, _, total = used[0].partition("/")
            gpu.mem_used_bytes = tool_bytes(amount, used[1] or "MB")
            if total:
                gpu.mem_total_bytes = tool_bytes(total, used[1] or "MB")
        if "VRAM_TOTAL" in cells and cells["VRAM_TOTAL"][0] != "N/A":
            gpu.mem_total_bytes = tool_bytes(cells["VRAM_TOTAL"][0], cells["VRAM_TOTAL"][1] or "MB")
        if "POWER" in cells:
            gpu.power_w = _float(cells["POWER"][0])
        temp = next((cells[n] for n in _TEMP_NAMES if n in cells), None)
        gpu.temperature_c = _float(temp[0]) if temp else None
        table.gpus.append(gpu)
    return Parsed(value=table, warnings=warnings)
