"""Parser for ``rocminfo``: the HSA runtime version and its agents (CPUs and GPUs).

rocminfo is what the ROCm runtime itself sees, so it is the ground truth for "is this GPU
usable by HIP/RCCL" (gfx target, compute units, memory pools) independently of the SMI tools.
Its output is 'Key:   value' lines indented under 'Agent N' banners; pools and ISAs are
nested one level deeper. Damaged or unknown lines become warnings, never exceptions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collscope.parsers.common import FieldReader, GpuInfo, Parsed, set_field, to_int

_AGENT = re.compile(r"^\s*Agent\s+(\d+)\s*$", re.IGNORECASE)
_POOL = re.compile(r"^\s*Pool\s+(\d+)\s*$", re.IGNORECASE)
_ISA = re.compile(r"^\s*ISA\s+(\d+)\s*$", re.IGNORECASE)
_ROCK = re.compile(r"ROCk module version\s+(\S+)", re.IGNORECASE)
_LEADING_INT = re.compile(r"^\s*([-+]?\d+)")
_SIZE = re.compile(r"^\s*(\d+)(?:\([^)]*\))?\s*([KMGT]?B)\b", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}
# Agent numbers beyond this are damaged text, not hardware.
MAX_AGENTS = 4096


@dataclass
class HsaPool:
    """One memory pool of an agent; ``size_bytes`` converts rocminfo's KB (KiB)."""

    segment: str | None = None
    size_bytes: int | None = None
    allocatable: bool | None = None
    accessible_by_all: bool | None = None


@dataclass
class HsaAgent:
    """One HSA agent as rocminfo prints it; fields it does not print stay None.

    ``name`` is the gfx target for GPUs (e.g. 'gfx942') and the CPU model for CPUs;
    ``device_type`` is 'CPU', 'GPU' or 'DSP' as printed. ``bdf_id`` is rocminfo's BDFID,
    (bus << 8) | (device << 3) | function, without the PCI domain.
    """

    number: int
    name: str | None = None
    uuid: str | None = None
    marketing_name: str | None = None
    vendor_name: str | None = None
    device_type: str | None = None
    node: int | None = None
    compute_units: int | None = None
    simds_per_cu: int | None = None
    chip_id: int | None = None
    bdf_id: int | None = None
    max_clock_mhz: int | None = None
    wavefront_size: int | None = None
    cache_kb: dict[str, int] = field(default_factory=dict)
    pools: list[HsaPool] = field(default_factory=list)
    isas: list[str] = field(default_factory=list)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def is_gpu(self) -> bool:
        return (self.device_type or "").upper() == "GPU"

    @property
    def pci_bdf(self) -> str | None:
        """'bb:dd.f' from BDFID (None for CPUs, which report 0)."""
        if not self.bdf_id or self.bdf_id < 0 or self.bdf_id > 0xFFFF:
            return None
        bus, dev, fn = self.bdf_id >> 8, (self.bdf_id >> 3) & 0x1F, self.bdf_id & 0x7
        return f"{bus:02x}:{dev:02x}.{fn}"


@dataclass
class RocmInfo:
    """Everything understood from one rocminfo run."""

    runtime_version: str | None = None
    runtime_ext_version: str | None = None
    kernel_module_version: str | None = None
    system: dict[str, str] = field(default_factory=dict)
    agents: list[HsaAgent] = field(default_factory=list)

    @property
    def gpus(self) -> list[HsaAgent]:
        return [agent for agent in self.agents if agent.is_gpu]


def _leading_int(value: str) -> int | None:
    """128 from '128(0x80)', 3800 from '3800'; None for text."""
    match = _LEADING_INT.match(value)
    return to_int(match.group(1)) if match else None


def _size_bytes(value: str) -> int | None:
    """Bytes from '201310208(0xbffc000) KB' (rocminfo's KB are KiB)."""
    match = _SIZE.match(value)
    if not match:
        return None
    number = to_int(match.group(1))
    factor = _SIZE_UNITS.get(match.group(2).lower())
    if number is None or factor is None:
        return None
    return number * factor


def _bool(value: str) -> bool | None:
    low = value.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    return None


def _split(line: str) -> tuple[str, str] | None:
    """('Key', 'value') from 'Key:   value', 'Key:value' or 'Key:: value' (all occur)."""
    if ":" not in line:
        return None
    key, value = line.split(":", 1)
    key = key.strip()
    if not key:
        return None
    return key, value.lstrip(":").strip()


def _present(value: str) -> str | None:
    value = value.strip()
    return value if value and value.upper() not in ("N/A", "NONE") else None


# rocminfo's keys (lower case) -> the field each fills and how its value is read; a key of an
# agent that neither table knows is kept in the agent's ``extra``, one of a pool is dropped.
_AGENT_FIELDS: dict[str, FieldReader] = {
    "name": ("name", _present), "uuid": ("uuid", _present),
    "marketing name": ("marketing_name", _present), "vendor name": ("vendor_name", _present),
    "device type": ("device_type", _present), "node": ("node", _leading_int),
    "compute unit": ("compute_units", _leading_int),
    "simds per cu": ("simds_per_cu", _leading_int), "chip id": ("chip_id", _leading_int),
    "bdfid": ("bdf_id", _leading_int), "max clock freq. (mhz)": ("max_clock_mhz", _leading_int),
    "wavefront size": ("wavefront_size", _leading_int),
}
_POOL_FIELDS: dict[str, FieldReader] = {
    "segment": ("segment", _present), "size": ("size_bytes", _size_bytes),
    "allocatable": ("allocatable", _bool), "accessible by all": ("accessible_by_all", _bool),
}


def parse_rocminfo(text: str) -> Parsed[RocmInfo]:
    """``rocminfo`` (or ``rocminfo --support``): runtime versions and every agent.

    Agent-level keys are those at the agent's own indentation; deeper lines belong to the
    section opened above them (Cache Info, Pool N, ISA N, per-dimension sizes).
    """
    warnings: list[str] = []
    info = RocmInfo()
    agent: HsaAgent | None = None
    agent_indent: int | None = None
    section: str | None = None
    pool: HsaPool | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.replace("\t", "    ")
        stripped = line.strip()
        if not stripped or set(stripped) <= set("*=-") or stripped.startswith("***"):
            continue  # separators and the closing '*** Done ***'
        rock = _ROCK.search(stripped)
        if rock:
            info.kernel_module_version = rock.group(1)
            continue
        indent = len(line) - len(line.lstrip(" "))
        start = _AGENT.match(line)
        if start:
            number = to_int(start.group(1))
            if number is None or number > MAX_AGENTS:
                warnings.append(f"line {lineno}: agent number {start.group(1)[:20]!r} out of range")
                agent = None
                continue
            agent = HsaAgent(number=number)
            info.agents.append(agent)
            agent_indent, section, pool = None, None, None
            continue
        if agent is None:
            pair = _split(stripped)
            if pair is None:
                continue  # banners such as 'HSA System Attributes', 'HSA Agents'
            key, value = pair
            if key.lower() == "runtime version":
                info.runtime_version = _present(value)
            elif key.lower() == "runtime ext version":
                info.runtime_ext_version = _present(value)
            else:
                info.system[key] = value
            continue
        if _POOL.match(line):
            pool = HsaPool()
            agent.pools.append(pool)
            section = "pool"
            continue
        if _ISA.match(line):
            section, pool = "isa", None
            continue
        pair = _split(stripped)
        if agent_indent is None and pair is not None:
            agent_indent = indent
        if agent_indent is not None and indent <= agent_indent:
            if pair is None:
                warnings.append(f"line {lineno}: not understood: {stripped[:60]!r}")
                continue
            key, value = pair
            if not value:
                section, pool = key.lower(), None  # 'Cache Info:', 'Pool Info:', ...
                continue
            section, pool = None, None
            if not set_field(agent, _AGENT_FIELDS, key.lower(), value):
                agent.extra.setdefault(key, value)
            continue
        if pair is None:
            continue  # 'x   1024(0x400)' under '... per Dimension:'
        key, value = pair
        if section == "cache info":
            size = _leading_int(value)
            if size is not None:
                agent.cache_kb[key] = size
        elif section == "pool" and pool is not None:
            set_field(pool, _POOL_FIELDS, key.lower(), value)
        elif section == "isa" and key.lower() == "name" and value:
            agent.isas.append(value)
    if not info.agents:
        warnings.append("no 'Agent N' sections found")
    if info.runtime_version is None:
        warnings.append("no 'Runtime Version' line found")
    return Parsed(info, warnings)


def parse_gpus(text: str) -> Parsed[list[GpuInfo]]:
    """The GPU agents of ``rocminfo`` as GpuInfo, indexed 0.. in agent order (HIP's order).

    ``name`` is the marketing name, ``memory_bytes`` the largest GLOBAL pool; the gfx target,
    compute units, HSA node and PCI 'bb:dd.f' go to ``extra``.
    """
    parsed = parse_rocminfo(text)
    gpus = []
    for index, agent in enumerate(parsed.value.gpus):
        info = GpuInfo(index=index, name=agent.marketing_name or agent.name, uuid=agent.uuid)
        sizes = [
            p.size_bytes
            for p in agent.pools
            if p.size_bytes is not None and "GLOBAL" in (p.segment or "").upper()
        ]
        info.memory_bytes = max(sizes) if sizes else None
        if agent.name:
            info.extra["gfx_target"] = agent.name
        if agent.compute_units is not None:
            info.extra["compute_units"] = str(agent.compute_units)
        if agent.node is not None:
            info.extra["hsa_node"] = str(agent.node)
        if agent.pci_bdf:
            info.extra["pci_bdf"] = agent.pci_bdf
        gpus.append(info)
    return Parsed(gpus, list(parsed.warnings))
