"""Parsers for ``ucx_info -v`` (build facts) and ``ucx_info -d`` (memory domains, transports).

UCX picks its transports at run time from what was compiled in and what hardware it finds;
these two outputs tell a diagnosis whether GPU memory (CUDA/ROCm) and RDMA paths are usable at
all. Both parsers accept the older layouts (``# UCT version=1.9.0 revision ...``,
``#   Transport: tcp`` followed by several ``#   Device:`` blocks) as well as the current one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collscope.parsers.common import Parsed, to_float, to_int

# ---------------------------------------------------------------------------------------------
# ucx_info -v
# ---------------------------------------------------------------------------------------------


@dataclass
class UcxVersion:
    """Build facts of one UCX installation.

    The ``with_*`` fields are tri-state on purpose: True when the configure line enables the
    feature (``--with-rocm``, ``--with-rocm=/opt/rocm``), False when it disables it
    (``--without-rocm``, ``--with-rocm=no``), None when the line does not mention it — UCX's
    configure then auto-detects, so ``ucx_info -d`` (the transports actually present) is the
    authority.
    """

    version: str | None = None
    api_version: str | None = None
    library_path: str | None = None
    git_branch: str | None = None
    git_revision: str | None = None
    configure_flags: list[str] = field(default_factory=list)
    # option name (without the leading --with-/--enable- etc.) -> value; True/False for bare
    # enable/disable switches, the text after "=" otherwise.
    configure_options: dict[str, str | bool] = field(default_factory=dict)
    with_rocm: bool | None = None
    with_cuda: bool | None = None
    with_verbs: bool | None = None
    with_mlx5: bool | None = None
    with_rdmacm: bool | None = None
    with_knem: bool | None = None
    with_xpmem: bool | None = None
    with_gdrcopy: bool | None = None
    multi_threaded: bool | None = None  # --enable-mt

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        """(1, 16, 0) for "1.16.0": lets rules compare versions without string pitfalls."""
        return _version_tuple(self.version)


def _version_tuple(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = re.findall(r"\d+", text.split("-")[0])
    return tuple(int(p) for p in parts[:4]) or None


_NEGATIVE_VALUES = {"no", "false", "0", "none", "off"}


def _configure_switch(options: dict[str, str | bool], *names: str) -> bool | None:
    """Tri-state of a configure feature from any of its spellings (first one present wins)."""
    for name in names:
        if name not in options:
            continue
        value = options[name]
        if isinstance(value, bool):
            return value
        return value.strip().lower() not in _NEGATIVE_VALUES
    return None


def _parse_configure_options(flags: list[str]) -> dict[str, str | bool]:
    options: dict[str, str | bool] = {}
    for flag in flags:
        match = re.match(r"^--(with|without|enable|disable)-([A-Za-z0-9_.+-]+)(?:=(.*))?$", flag)
        if not match:
            continue
        kind, name, value = match.group(1), match.group(2), match.group(3)
        if kind in ("without", "disable"):
            options[name] = False
        elif value is None:
            options[name] = True
        else:
            options[name] = value
    return options


def _split_configure_line(text: str) -> list[str]:
    """Configure flags, keeping quoted values (CFLAGS='-O3 -g') as one flag."""
    flags: list[str] = []
    for match in re.finditer(r"""(?:[^\s'"]|'[^']*'|"[^"]*")+""", text):
        flags.append(match.group(0))
    return flags


def parse_ucx_version(text: str) -> Parsed[UcxVersion]:
    """Parse ``ucx_info -v``; unknown lines are ignored, a missing version is a warning."""
    result = UcxVersion()
    warnings: list[str] = []
    if not isinstance(text, str):
        return Parsed(result, ["input is not text"])
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip().lstrip("#").strip()
        if not line:
            continue
        lower = line.lower()
        if lower.startswith("library version:"):
            result.version = line.split(":", 1)[1].strip() or None
        elif lower.startswith("api headers version:"):
            result.api_version = line.split(":", 1)[1].strip() or None
        elif lower.startswith("library path:"):
            result.library_path = line.split(":", 1)[1].strip() or None
        elif lower.startswith("git branch"):
            match = re.match(r"git branch\s+'([^']*)'\s*,?\s*revision\s+(\S+)", line, re.I)
            if match:
                result.git_branch = match.group(1) or None
                result.git_revision = match.group(2)
            else:
                warnings.append(f"line {lineno}: unrecognised git line: {line[:80]!r}")
        elif lower.startswith("configured with:"):
            flags = _split_configure_line(line.split(":", 1)[1])
            result.configure_flags = flags
        else:
            # Older UCX: "# UCT version=1.9.0 revision 1d0a420" or "# Version 1.9.0".
            match = re.match(r"^(?:uc[tps]\s+)?version\s*[=:]?\s*(\d+(?:\.\d+)+\S*)"
                             r"(?:\s+revision\s+(\S+))?", line, re.I)
            if match:
                if result.version is None:
                    result.version = match.group(1)
                if match.group(2) and result.git_revision is None:
                    result.git_revision = match.group(2)
    options = _parse_configure_options(result.configure_flags)
    result.configure_options = options
    result.with_rocm = _configure_switch(options, "rocm")
    result.with_cuda = _configure_switch(options, "cuda")
    result.with_verbs = _configure_switch(options, "verbs")
    result.with_mlx5 = _configure_switch(options, "mlx5", "mlx5-dv")
    result.with_rdmacm = _configure_switch(options, "rdmacm")
    result.with_knem = _configure_switch(options, "knem")
    result.with_xpmem = _configure_switch(options, "xpmem")
    result.with_gdrcopy = _configure_switch(options, "gdrcopy")
    result.multi_threaded = _configure_switch(options, "mt")
    if result.version is None:
        warnings.append("no UCX library version found")
    if not result.configure_flags:
        warnings.append("no 'Configured with' line found")
    return Parsed(result, warnings)


# ---------------------------------------------------------------------------------------------
# ucx_info -d
# ---------------------------------------------------------------------------------------------


@dataclass
class UcxTransport:
    """One transport on one device, e.g. rc_mlx5 on mlx5_0:1 or rocm_copy on rocm_cpy.

    Bandwidth is in MB/s exactly as UCX prints it: ``dedicated/ppn + shared``; the total is
    their sum because one of the two is zero for every transport UCX ships.
    """

    name: str
    device: str | None = None
    memory_domain: str | None = None
    component: str | None = None
    type: str | None = None  # network / intra-node / accelerator / loopback (UCX >= 1.11)
    system_device: str | None = None
    bandwidth_dedicated_mbs: float | None = None
    bandwidth_shared_mbs: float | None = None
    latency_ns: float | None = None
    latency_per_ep_ns: float | None = None  # the "+ x * N" growth term, where printed
    overhead_ns: float | None = None
    device_priority: int | None = None
    max_eps: str | None = None
    capabilities: dict[str, str] = field(default_factory=dict)

    @property
    def bandwidth_mbs(self) -> float | None:
        """Total modelled bandwidth in MB/s, None where no bandwidth line was printed."""
        if self.bandwidth_dedicated_mbs is None and self.bandwidth_shared_mbs is None:
            return None
        return (self.bandwidth_dedicated_mbs or 0.0) + (self.bandwidth_shared_mbs or 0.0)

    @property
    def port(self) -> int | None:
        """RDMA port from a "mlx5_0:1"-style device name."""
        if self.device and ":" in self.device:
            return to_int(self.device.rsplit(":", 1)[1])
        return None


@dataclass
class UcxMemoryDomain:
    """A memory domain (UCX's unit of registration), e.g. ``mlx5_0`` of component ``ib``."""

    name: str
    component: str | None = None
    memory_types: list[str] = field(default_factory=list)  # host, cuda, rocm, ...
    no_devices: bool = False  # "< no supported devices found >": the MD is there, unusable
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass
class UcxDevices:
    """Everything ``ucx_info -d`` lists."""

    memory_domains: list[UcxMemoryDomain] = field(default_factory=list)
    transports: list[UcxTransport] = field(default_factory=list)
    connection_managers: list[str] = field(default_factory=list)

    @property
    def transport_names(self) -> list[str]:
        """Distinct transport names in the order first seen."""
        return list(dict.fromkeys(t.name for t in self.transports))

    def devices_of(self, transport: str) -> list[str]:
        """Devices that offer ``transport`` (e.g. "rc_mlx5" -> ["mlx5_0:1"])."""
        return [t.device for t in self.transports if t.name == transport and t.device]

    def transports_on(self, device: str) -> list[str]:
        """Transports available on ``device`` (e.g. "mlx5_0:1" -> ["dc_mlx5", "rc_verbs", ...])."""
        return [t.name for t in self.transports if t.device == device]

    @property
    def has_cuda(self) -> bool:
        """Whether any CUDA-memory transport is present (cuda_copy, cuda_ipc, gdr_copy)."""
        return any(t.name.startswith("cuda") or t.name == "gdr_copy" for t in self.transports)

    @property
    def has_rocm(self) -> bool:
        """Whether any ROCm-memory transport is present (rocm_copy, rocm_ipc, rocm_gdr)."""
        return any(t.name.startswith("rocm") for t in self.transports)

    @property
    def rdma_devices(self) -> list[str]:
        """Distinct devices carrying an RDMA transport (rc/ud/dc, verbs or mlx5)."""
        rdma = re.compile(r"^(rc|ud|dc|srd)(_|$)")
        return list(dict.fromkeys(
            t.device for t in self.transports if t.device and rdma.match(t.name)))


# Bounded repetitions keep every search linear on pathological lines.
_NUMBER = r"[-+]?\d{1,30}(?:\.\d{1,30})?(?:[eE][-+]?\d{1,4})?"


def _parse_bandwidth(value: str) -> tuple[float | None, float | None]:
    """(dedicated, shared) MB/s from "0.00/ppn + 19360.00 MB/sec", "6661.48 MB/sec", ..."""
    text = value.split("MB")[0]
    per_ppn = re.search(rf"({_NUMBER})\s*/\s*ppn", text)
    numbers = [to_float(n) for n in re.findall(_NUMBER, text)]
    numbers = [n for n in numbers if n is not None]
    if per_ppn:
        dedicated = to_float(per_ppn.group(1))
        rest = text[per_ppn.end():]
        shared_numbers = re.findall(_NUMBER, rest)
        shared = to_float(shared_numbers[0]) if shared_numbers else None
        return dedicated, shared
    if len(numbers) >= 2:
        # Pre-1.10 "0.00 + 11794.23 MB/sec": dedicated + shared without the /ppn marker.
        return numbers[0], numbers[1]
    if len(numbers) == 1:
        return None, numbers[0]
    return None, None


def _parse_latency(value: str) -> tuple[float | None, float | None]:
    """(base ns, per-endpoint ns) from "600 + 1.000 * N nsec" or "600 nsec + 1 * N"."""
    growth = re.search(rf"({_NUMBER})\s*\*\s*N", value)
    without_growth = value[:growth.start()] + value[growth.end():] if growth else value
    base_match = re.search(_NUMBER, without_growth)
    base = to_float(base_match.group(0)) if base_match else None
    return base, (to_float(growth.group(1)) if growth else None)


def _first_number(value: str) -> float | None:
    match = re.search(_NUMBER, value)
    return to_float(match.group(0)) if match else None


def _memory_types(value: str) -> list[str]:
    """["host", "cuda", "cuda-managed"] from "host (reg), cuda (access,alloc), ..."."""
    without_details = re.sub(r"\([^)]{0,200}\)?", "", value)
    return [part.strip() for part in without_details.split(",") if part.strip()]


def parse_ucx_devices(text: str) -> Parsed[UcxDevices]:
    """Parse ``ucx_info -d``; never raises, unknown lines become warnings only when suspicious."""
    result = UcxDevices()
    warnings: list[str] = []
    if not isinstance(text, str):
        return Parsed(result, ["input is not text"])
    md: UcxMemoryDomain | None = None
    transport_name: str | None = None
    current: UcxTransport | None = None

    def start_transport(device: str | None) -> UcxTransport:
        name = transport_name or "unknown"
        new = UcxTransport(name=name, device=device,
                           memory_domain=md.name if md else None,
                           component=md.component if md else None)
        result.transports.append(new)
        return new

    for lineno, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped.startswith("#"):
            # ucx_info prints every line after "#"; other lines are shell noise or log lines.
            continue
        line = stripped.lstrip("#").strip()
        if not line:
            continue
        if line.startswith("<") and "no supported devices" in line:
            if md is not None:
                md.no_devices = True
            continue
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        value = value.strip()
        if not sep:
            # "rkey_ptr is supported", "memory invalidation is supported": MD properties.
            if current is None and md is not None:
                md.attributes[line] = "yes"
            continue
        if key == "memory domain":
            md = UcxMemoryDomain(name=value or "unknown")
            result.memory_domains.append(md)
            transport_name, current = None, None
        elif key == "component":
            if md is not None and current is None:
                md.component = value or None
            elif md is None:
                # A Component line with no Memory domain before it (e.g. a cut capture).
                md = UcxMemoryDomain(name=value or "unknown", component=value or None)
                result.memory_domains.append(md)
        elif key == "connection manager":
            if value:
                result.connection_managers.append(value)
            md, transport_name, current = None, None, None
        elif key == "transport":
            transport_name = value or "unknown"
            current = None
        elif key == "device":
            if transport_name is None:
                warnings.append(f"line {lineno}: device {value!r} outside any transport")
                transport_name = "unknown"
            current = start_transport(value or None)
        elif current is None and transport_name is not None and key == "capabilities":
            # Old layout without a Device line before capabilities.
            current = start_transport(None)
        elif key == "capabilities":
            continue
        elif current is not None:
            _apply_transport_field(current, key, value, lineno, warnings)
        elif md is not None:
            if key == "memory types":
                md.memory_types = _memory_types(value)
            else:
                md.attributes[key] = value
    if not result.memory_domains and not result.transports:
        warnings.append("no memory domain or transport found")
    return Parsed(result, warnings)


def _apply_transport_field(t: UcxTransport, key: str, value: str, lineno: int,
                           warnings: list[str]) -> None:
    if key == "type":
        t.type = value or None
    elif key == "system device":
        t.system_device = value or None
    elif key == "bandwidth":
        dedicated, shared = _parse_bandwidth(value)
        if dedicated is None and shared is None:
            warnings.append(f"line {lineno}: unreadable bandwidth {value[:60]!r}")
        t.bandwidth_dedicated_mbs, t.bandwidth_shared_mbs = dedicated, shared
    elif key == "latency":
        t.latency_ns, t.latency_per_ep_ns = _parse_latency(value)
        if t.latency_ns is None:
            warnings.append(f"line {lineno}: unreadable latency {value[:60]!r}")
    elif key == "overhead":
        t.overhead_ns = _first_number(value)
    elif key in ("device priority", "priority"):
        t.device_priority = to_int(value)
    elif key == "max eps":
        t.max_eps = value.strip("()") or None
    else:
        t.capabilities[key] = value
