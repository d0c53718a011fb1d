"""Pure: what each GPU is doing right now (memory held, engine busy, processes), from whichever
output a capture holds: nvidia-smi's or amd-smi's default table, amd-smi monitor or metric,
rocm-smi (concise table or --json), nvidia-smi --query-gpu CSV. The first source with readings
wins; each reading says where it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from collscope.doctor import probes
from collscope.doctor import recognize as rec
from collscope.parsers import amd_smi, nvidia_smi, rocm_smi, smi_tables
from collscope.parsers.common import GpuInfo, Parsed, is_json, to_float
from collscope.parsers.smi_tables import GpuProcess, GpuUsage


@dataclass
class UsageFacts:
    gpus: list[GpuUsage] = field(default_factory=list)
    mem_percent: dict[int, float] = field(default_factory=dict)   # where only % is known
    processes: list[GpuProcess] = field(default_factory=list)
    processes_listed: bool = False     # the source lists processes (an empty list is news)
    source: str | None = None

    def used_fraction(self, gpu: GpuUsage) -> float | None:
        """Memory in use over memory installed, from bytes or the tool's own percentage."""
        if gpu.mem_used_bytes is not None and gpu.mem_total_bytes:
            return gpu.mem_used_bytes / gpu.mem_total_bytes
        percent = self.mem_percent.get(gpu.index)
        return None if percent is None else percent / 100


def _tables(text: str, parse: Callable[[str], Parsed[smi_tables.SmiTable]]) -> UsageFacts:
    table = parse(text).value
    return UsageFacts(gpus=table.gpus, processes=table.processes,
                      processes_listed=bool(table.processes) or table.no_processes)


def _metric(text: str) -> UsageFacts:
    usage = UsageFacts()
    for m in amd_smi.parse_metric(text).value:
        usage.gpus.append(GpuUsage(index=m.index, util_percent=m.gfx_activity_percent,
                                   mem_used_bytes=m.vram_used_bytes,
                                   mem_total_bytes=m.vram_total_bytes, power_w=m.power_w,
                                   temperature_c=m.temperature_hotspot_c))
    return usage


def _rocm_smi(text: str) -> UsageFacts:
    parsed = (rocm_smi.parse_json_status if is_json(text) else rocm_smi.parse_concise)(text)
    usage = UsageFacts()
    for status in parsed.value:
        usage.gpus.append(GpuUsage(index=status.index, name=status.name,
                                   util_percent=status.gpu_percent, power_w=status.power_w,
                                   temperature_c=status.temperature_c))
        if status.vram_percent is not None:
            usage.mem_percent[status.index] = status.vram_percent
    return usage


def nvidia_query(text: str) -> Parsed[list[GpuInfo]]:
    """--query-gpu CSV with its header (bundles, older doctor) or without (csv,noheader, the
    fields doctor asks for, or an earlier doctor's list); nothing from other field lists."""
    return nvidia_smi.parse_query_gpu_any(text, probes.NVIDIA_QUERY_FIELD_SETS)


def _nvidia_csv(text: str) -> UsageFacts:
    parsed = nvidia_query(text)
    usage = UsageFacts()
    for gpu in parsed.value:
        util = gpu.extra.get("utilization.gpu", "").removesuffix("%").strip()
        usage.gpus.append(GpuUsage(index=gpu.index, name=gpu.name, bus_id=gpu.pci_bus_id,
                                   util_percent=to_float(util) if util else None,
                                   mem_used_bytes=gpu.memory_used_bytes,
                                   mem_total_bytes=gpu.memory_bytes))
    return usage


# Sources in order of preference: tables that list processes first.
SOURCES: tuple[tuple[str, Callable[[str], UsageFacts]], ...] = (
    (rec.NVIDIA_SMI_TABLE, lambda t: _tables(t, smi_tables.parse_nvidia_smi)),
    (rec.AMD_SMI_TABLE, lambda t: _tables(t, smi_tables.parse_amd_smi_table)),
    (rec.AMD_SMI_MONITOR, lambda t: _tables(t, smi_tables.parse_amd_smi_monitor)),
    (rec.AMD_SMI_METRIC, _metric),
    ("nvidia-smi-query-gpu.csv", _nvidia_csv),
    ("rocm-smi.txt", _rocm_smi),
)


def _has_readings(usage: UsageFacts) -> bool:
    return any(g.util_percent is not None and usage.used_fraction(g) is not None
               for g in usage.gpus)


def _vram_bytes(usage: UsageFacts, capture: probes.RawCapture) -> UsageFacts:
    """rocm-smi's concise table gives VRAM as a percentage; `--showmeminfo vram` (its own file
    or the same one) gives the bytes, used and installed."""
    text = capture.get("rocm-smi--showmeminfo-vram.txt")
    if text is None:
        return usage
    parse = rocm_smi.parse_json if is_json(text) else rocm_smi.parse_showmeminfo
    by_index = {g.index: g for g in parse(text).value}
    for gpu in usage.gpus:
        vram = by_index.get(gpu.index)
        if vram is not None and vram.memory_bytes and vram.memory_used_bytes is not None:
            gpu.mem_total_bytes, gpu.mem_used_bytes = vram.memory_bytes, vram.memory_used_bytes
    return usage


def usage_facts(capture: probes.RawCapture) -> UsageFacts:
    """GPU usage from the first source in the capture that has both activity and memory."""
    for name, read in SOURCES:
        if name in capture:
            usage = read(capture[name])
            if name == "rocm-smi.txt":
                usage = _vram_bytes(usage, capture)
            if _has_readings(usage):
                usage.source = name
                return usage
    return UsageFacts()
