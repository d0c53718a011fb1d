"""GPUs: every GPU list a capture holds merged into one, the topology matrix, the vendor."""

from __future__ import annotations

from typing import Any

from collscope.doctor import probes, recognize
from collscope.doctor.facts.common import add_notes, as_dict, as_int, as_str, read_json
from collscope.doctor.facts.records import AMD_DEVICE_IDS, AMD_VENDOR_ID, NVIDIA_VENDOR_ID, Facts
from collscope.doctor.gpu_usage import nvidia_query
from collscope.hw.topology import read_topology
from collscope.parsers import (
    amd_smi,
    rocm_smi,
    rocminfo,
    smi_tables,
)
from collscope.parsers.common import GpuInfo, Parsed, is_json


def _gpus_from_library(data: Any) -> list[GpuInfo]:
    gpus = []
    for item in as_dict(data).get("gpus") or []:
        if not isinstance(item, dict) or as_int(item.get("index")) is None:
            continue
        gpus.append(GpuInfo(index=as_int(item.get("index")) or 0, name=as_str(item.get("name")),
                            memory_bytes=as_int(item.get("memory_bytes")),
                            pci_bus_id=as_str(item.get("pci_bus_id")),
                            uuid=as_str(item.get("uuid")),
                            serial=as_str(item.get("serial")),
                            driver_version=as_str(item.get("driver_version")),
                            numa_node=as_int(item.get("numa_node"))))
    return gpus


def _merge_gpus(primary: list[GpuInfo], others: list[list[GpuInfo]]) -> list[GpuInfo]:
    """Fill fields the first source lacks from the others, GPU by GPU (same index)."""
    for other in others:
        by_index = {g.index: g for g in other}
        for gpu in primary:
            extra = by_index.get(gpu.index)
            if extra is None:
                continue
            for name in ("name", "memory_bytes", "pci_bus_id", "uuid", "driver_version",
                         "numa_node", "vbios", "serial"):
                if getattr(gpu, name) is None and getattr(extra, name) is not None:
                    setattr(gpu, name, getattr(extra, name))
    return primary


GpuSources = dict[str, list[tuple[str, list[GpuInfo]]]]


def _table_gpus(parse: Any) -> Any:
    """A GPU list from nvidia-smi's or amd-smi's default table."""
    def gpus(text: str) -> Parsed[list[GpuInfo]]:
        parsed = parse(text)
        table = parsed.value
        return Parsed([GpuInfo(index=g.index, name=g.name, memory_bytes=g.mem_total_bytes,
                               pci_bus_id=g.bus_id, driver_version=table.driver)
                       for g in table.gpus], parsed.warnings)
    return gpus


def _gpu_sources(capture: probes.RawCapture, notes: dict[str, list[str]]) -> GpuSources:
    """Every GPU list the capture holds: vendor -> [(file, gpus)] in order of preference."""
    amd: list[tuple[str, list[GpuInfo]]] = []
    nvidia: list[tuple[str, list[GpuInfo]]] = []
    library = read_json(capture, probes.HW_INVENTORY_FILE, notes)
    if library is not None:
        backend = as_dict(library).get("backend")
        target = amd if backend == "amd" else nvidia if backend == "nvidia" else None
        if target is not None:
            target.append((probes.HW_INVENTORY_FILE, _gpus_from_library(library)))
    parsers = (
        ("amd-smi-static.txt", amd_smi.parse_static, amd),
        ("rocm-smi--showproductname.txt", rocm_smi.parse_productname, amd),
        ("rocm-smi--showmeminfo-vram.txt", rocm_smi.parse_showmeminfo, amd),
        ("rocminfo.txt", rocminfo.parse_gpus, amd),
        ("nvidia-smi-query-gpu.csv", nvidia_query, nvidia),
        (recognize.AMD_SMI_TABLE, _table_gpus(smi_tables.parse_amd_smi_table), amd),
        (recognize.NVIDIA_SMI_TABLE, _table_gpus(smi_tables.parse_nvidia_smi), nvidia),
    )
    for name, parse, target in parsers:
        if name in capture:
            text = capture[name]
            # rocm-smi --json (what doctor runs) or the text a bundle may hold.
            use = rocm_smi.parse_json if name.startswith("rocm-smi") and is_json(text) \
                else parse
            parsed = use(text)
            add_notes(notes, name, parsed.warnings)
            target.append((name, list(parsed.value)))
    if "rocm-smi.txt" in capture:
        text = capture["rocm-smi.txt"]
        read = rocm_smi.parse_json_status if is_json(text) else rocm_smi.parse_concise
        concise = read(text)
        add_notes(notes, "rocm-smi.txt", concise.warnings)
        amd.append(("rocm-smi.txt", [
            GpuInfo(index=s.index, name=AMD_DEVICE_IDS.get((s.device_id or "").lower()),
                    extra={"device_id": s.device_id} if s.device_id else {})
            for s in concise.value]))
    return {"amd": [s for s in amd if s[1]], "nvidia": [s for s in nvidia if s[1]]}


def _topology(capture: probes.RawCapture, facts: Facts) -> None:
    found = read_topology(capture, facts.vendor)
    for name, warnings in found.warnings.items():
        add_notes(facts.notes, name, warnings)
    facts.gpu_nearest_nic.update(found.nearest_nics)
    facts.gpu_nic_link.update(found.nic_link)
    facts.topology, facts.topology_source = found.topology, found.source


def _vendor(facts: Facts, sources: GpuSources, capture: probes.RawCapture) -> str:
    if sources["amd"] or "amd-smi-topology.txt" in capture or "rocm-smi--showtopo.txt" in capture:
        return "amd"
    if not sources["nvidia"] and recognize.AMD_SMI_METRIC in capture:
        return "amd"
    if sources["nvidia"] or "nvidia-smi-topo-m.txt" in capture:
        return "nvidia"
    if facts.torch and facts.torch.gpu_count > 0:
        return "amd" if facts.torch.hip else "nvidia"
    vendors = {d.vendor for d in facts.pci if d.is_gpu}
    if AMD_VENDOR_ID in vendors:
        return "amd"
    if NVIDIA_VENDOR_ID in vendors:
        return "nvidia"
    return "none"




def gpus_and_topology(capture: probes.RawCapture, facts: Facts) -> None:
    """The GPU list (best source, gaps filled from the others), the topology matrix, and each
    GPU's NUMA node (from the vendor tool, the matrix, or its PCI device)."""
    sources = _gpu_sources(capture, facts.notes)
    facts.vendor = _vendor(facts, sources, capture)
    chosen = sources.get(facts.vendor) or []
    if chosen:
        # The longest list leads (a capture may hold an excerpt of one GPU), of those one
        # that names its GPUs (--showmeminfo lists memory only: names filled from sources
        # that spell the model differently would read as mixed models); the others fill in
        # what it lacks, GPU by GPU.
        first = max(range(len(chosen)), key=lambda i: (
            len(chosen[i][1]), sum(g.name is not None for g in chosen[i][1]), -i))
        facts.gpu_source = chosen[first][0]
        facts.gpus = _merge_gpus(chosen[first][1], [s[1] for i, s in enumerate(chosen)
                                                    if i != first])
    _topology(capture, facts)
    if facts.topology is not None and facts.topology.gpus > len(facts.gpus):
        # GPUs the matrix shows but no inventory lists: known by index only.
        known = {g.index for g in facts.gpus}
        facts.gpus += [GpuInfo(index=i, extra={"source": facts.topology_source or ""})
                       for i in range(facts.topology.gpus) if i not in known]
        facts.gpu_source = facts.gpu_source or facts.topology_source
    if facts.topology is not None:
        for gpu in facts.gpus:
            if gpu.numa_node is None and 0 <= gpu.index < len(facts.topology.numa_node):
                gpu.numa_node = facts.topology.numa_node[gpu.index]
    by_bus = {d.address.lower(): d for d in facts.pci}
    for gpu in facts.gpus:
        device = by_bus.get(full_bdf(gpu.pci_bus_id))
        if gpu.numa_node is None and device is not None:
            gpu.numa_node = device.numa_node




def full_bdf(bus_id: str | None) -> str:
    """"0000:0c:00.0" from "0c:00.0", "00000000:0C:00.0" (nvidia-smi) or "0000:0c:00.0"."""
    if not bus_id:
        return ""
    text = bus_id.strip().lower()
    parts = text.split(":")
    if len(parts) == 2:
        return f"0000:{text}"
    if len(parts) == 3:
        return f"{parts[0][-4:]:0>4}:{parts[1]}:{parts[2]}"
    return text
