"""Pure: a RawCapture (bundle file name -> text) becomes typed Facts, through the parsers.

No I/O here, so a live capture and a bundle from any cluster give the same facts, and tests
feed real tool outputs straight in. Odd or partial input never raises: what cannot be read is
left None (unknown, never 0) and noted in ``Facts.notes`` for the tools check to report.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from collscope.doctor import probes
from collscope.doctor.selftest import SelfTestResult
from collscope.parsers import (
    amd_smi,
    ibv_devinfo,
    nccl_debug,
    nvidia_smi,
    rocm_smi,
    rocminfo,
    ucx_info,
)
from collscope.parsers.common import GpuInfo, Topology, to_int

SYSFS = probes.SYSFS_DIR
AMD_VENDOR_ID = "0x1002"
NVIDIA_VENDOR_ID = "0x10de"
# AMD Instinct PCI device IDs (rocm-smi's DID column) -> model, for GPU lists without names.
# Sources: rocm-smi --showproductname "Card model" 0x74a1 = MI300X OAM and telegraf's MI100
# capture 0x738c (../shared/fixtures); amdsmi CHANGELOG pairs 0x74a2 with MI308X; Linux amdgpu
# lists 0x740c/0x740f as Aldebaran (MI250X/MI250, MI210); 0x74a5 is MI325X.
AMD_DEVICE_IDS = {"0x738c": "AMD Instinct MI100", "0x740c": "AMD Instinct MI250X/MI250",
                  "0x740f": "AMD Instinct MI210", "0x74a1": "AMD Instinct MI300X",
                  "0x74a2": "AMD Instinct MI308X", "0x74a5": "AMD Instinct MI325X"}
# PCI classes of GPUs: VGA/3D/display controllers and (AMD Instinct MI300) accelerators.
GPU_PCI_CLASSES = ("0x0300", "0x0302", "0x0380", "0x1200")


@dataclass
class NetInterface:
    """An IP interface from /sys/class/net; None where the kernel does not say."""

    name: str
    operstate: str | None = None     # up, down, unknown (loopback), dormant ...
    speed_mbps: int | None = None    # None when down or virtual (sysfs gives -1 or EINVAL)
    mtu: int | None = None
    numa_node: int | None = None
    addresses: list[str] = field(default_factory=list)

    @property
    def is_up(self) -> bool:
        return self.operstate in ("up", "unknown")


@dataclass
class Gid:
    index: int
    gid: str
    type: str | None = None          # "IB/RoCE v1", "RoCE v2"
    ndev: str | None = None          # netdev of a RoCE GID

    @property
    def ipv4(self) -> bool:
        return self.gid.lower().startswith("0000:0000:0000:0000:0000:ffff:")


@dataclass
class RdmaPort:
    port: int
    state: str | None = None         # ACTIVE, DOWN, INIT, ARMED (sysfs "4: ACTIVE" -> ACTIVE)
    phys_state: str | None = None    # LinkUp, Polling, Disabled ...
    rate: str | None = None          # "200 Gb/sec (4X HDR)"
    link_layer: str | None = None    # InfiniBand or Ethernet (RoCE)
    gids: list[Gid] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return (self.state or "").upper() == "ACTIVE"


@dataclass
class RdmaDevice:
    name: str
    numa_node: int | None = None
    fw_ver: str | None = None
    ports: list[RdmaPort] = field(default_factory=list)


@dataclass
class PciDevice:
    address: str
    class_code: str | None = None    # "0x120000"
    vendor: str | None = None        # "0x1002"
    numa_node: int | None = None

    @property
    def is_gpu(self) -> bool:
        return (self.class_code or "").startswith(GPU_PCI_CLASSES) and \
            self.vendor in (AMD_VENDOR_ID, NVIDIA_VENDOR_ID)

    @property
    def is_network(self) -> bool:
        return (self.class_code or "").startswith("0x02")


@dataclass
class TorchBuild:
    version: str | None = None
    hip: str | None = None
    cuda: str | None = None
    nccl_version: str | None = None  # RCCL's on ROCm builds
    gpu_available: bool = False
    gpu_count: int = 0
    gpu_names: list[str] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class HostInfo:
    hostname: str | None = None
    kernel: str | None = None
    cpu_vendor: str | None = None
    numa_balancing: int | None = None       # /proc/sys/kernel/numa_balancing
    cmdline: str | None = None
    numa_nodes: int | None = None           # from /sys/devices/system/node/online
    memlock_soft: int | None = None         # bytes; -1 unlimited
    memlock_hard: int | None = None
    iommu_groups: int | None = None
    is_root: bool | None = None
    rocm_version: str | None = None
    amdgpu_version: str | None = None
    nvidia_driver: str | None = None
    addresses: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class AcsBridge:
    address: str
    description: str
    acs_ctl: str

    @property
    def redirects(self) -> bool:
        """P2P requests/completions redirected up to the root complex: ACS blocks direct P2P."""
        return "ReqRedir+" in self.acs_ctl or "CmpltRedir+" in self.acs_ctl


@dataclass
class AcsInfo:
    checked: bool = False          # lspci -vvv output was available
    access_denied: bool = False    # capabilities hidden (lspci run without root)
    bridges: list[AcsBridge] = field(default_factory=list)


@dataclass
class Facts:
    """Everything the checks know about one node."""

    vendor: str = "none"                            # amd, nvidia, none
    gpus: list[GpuInfo] = field(default_factory=list)
    gpu_source: str | None = None                   # which file the GPU list came from
    topology: Topology | None = None
    topology_source: str | None = None
    gpu_nearest_nic: dict[int, list[str]] = field(default_factory=dict)  # nvidia-smi topo
    gpu_nic_link: dict[int, str] = field(default_factory=dict)           # best link type
    torch: TorchBuild | None = None
    host: HostInfo = field(default_factory=HostInfo)
    interfaces: list[NetInterface] = field(default_factory=list)
    rdma: list[RdmaDevice] = field(default_factory=list)
    rdma_source: str | None = None
    pci: list[PciDevice] = field(default_factory=list)
    acs: AcsInfo = field(default_factory=AcsInfo)
    ucx_version: ucx_info.UcxVersion | None = None
    ucx_devices: ucx_info.UcxDevices | None = None
    rocm_runtime: str | None = None                 # rocminfo's HSA runtime version
    nccl_log: nccl_debug.NcclDebugSummary | None = None
    env: dict[str, str] = field(default_factory=dict)
    tools: dict[str, probes.ToolRun] = field(default_factory=dict)
    selftest: SelfTestResult | None = None
    notes: dict[str, list[str]] = field(default_factory=dict)  # file -> parser warnings
    vendor_output: dict[str, str] = field(default_factory=dict)  # library -> what it printed

    @property
    def driver_version(self) -> str | None:
        versions = sorted({g.driver_version for g in self.gpus if g.driver_version})
        if versions:
            return ", ".join(versions)
        return self.host.amdgpu_version if self.vendor == "amd" else self.host.nvidia_driver

    @property
    def rccl_or_nccl_version(self) -> str | None:
        if self.torch and self.torch.nccl_version:
            return self.torch.nccl_version
        return self.nccl_log.version if self.nccl_log else None

    @property
    def gpu_platform(self) -> str:
        """The GPU model(s) as one string, for the platform rules."""
        names = sorted({g.name for g in self.gpus if g.name})
        if not names and self.torch:
            names = sorted(set(self.torch.gpu_names))
        return ", ".join(names)


# --------------------------------------------------------------------------- helpers


def _json(capture: probes.RawCapture, name: str, notes: dict[str, list[str]]) -> Any:
    text = capture.get(name)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        notes.setdefault(name, []).append(f"not JSON: {error}")
        return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return to_int(value) if isinstance(value, str) else None


def _sys(capture: probes.RawCapture, path: str) -> str | None:
    text = capture.get(f"{SYSFS}{path}")
    return text.strip() if text is not None else None


def _children(capture: probes.RawCapture, directory: str) -> list[str]:
    """Names directly below ``directory`` among the captured sysfs paths (sorted)."""
    prefix = f"{SYSFS}{directory.rstrip('/')}/"
    names = {key[len(prefix):].split("/", 1)[0] for key in capture if key.startswith(prefix)}
    return sorted(n for n in names if n)


def _numa(text: str | None) -> int | None:
    value = to_int(text or "")
    return value if value is not None and value >= 0 else None


def _note(notes: dict[str, list[str]], name: str, warnings: list[str]) -> None:
    if warnings:
        notes.setdefault(name, []).extend(warnings)


def parse_env(text: str) -> dict[str, str]:
    """env.txt (NAME=value lines, ``#`` comments; ``export`` tolerated) -> dict.

    Names that look like secrets are dropped here too: hand-made bundles may hold them.
    """
    from collscope.results import is_secret_name

    env: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].strip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or is_secret_name(name):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[name] = value.replace("\\n", "\n").replace("\\\\", "\\")
    return env


# --------------------------------------------------------------------------- sections


def _host(capture: probes.RawCapture, notes: dict[str, list[str]]) -> HostInfo:
    data = _dict(_json(capture, probes.HOST_FILE, notes))
    host = HostInfo(
        hostname=_str(data.get("hostname")), kernel=_str(data.get("kernel")),
        cpu_vendor=_str(data.get("cpu_vendor")), memlock_soft=_int(data.get("memlock_soft")),
        memlock_hard=_int(data.get("memlock_hard")), iommu_groups=_int(data.get("iommu_groups")),
        is_root=data.get("is_root") if isinstance(data.get("is_root"), bool) else None,
    )
    addresses = data.get("addresses")
    if isinstance(addresses, dict):
        host.addresses = {str(k): [str(a) for a in v] for k, v in addresses.items()
                          if isinstance(v, list)}
    host.numa_balancing = to_int(_sys(capture, "/proc/sys/kernel/numa_balancing") or "")
    host.cmdline = _sys(capture, "/proc/cmdline")
    online = _sys(capture, "/sys/devices/system/node/online")
    if online:
        host.numa_nodes = _count_cpulist(online)
    host.amdgpu_version = _sys(capture, "/sys/module/amdgpu/version") or None
    host.rocm_version = _sys(capture, "/opt/rocm/.info/version") or None
    nvidia = _sys(capture, "/proc/driver/nvidia/version")
    if nvidia:
        match = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)", nvidia)
        host.nvidia_driver = match.group(1) if match else None
    return host


def _count_cpulist(text: str) -> int | None:
    """Entries of a kernel list such as "0-1" or "0,2-3"; None for garbage."""
    total = 0
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        lo, hi = to_int(low), to_int(high) if high else to_int(low)
        if lo is None or hi is None or hi < lo or hi - lo > 4096:
            return None
        total += hi - lo + 1
    return total or None


def _torch(capture: probes.RawCapture, notes: dict[str, list[str]]) -> TorchBuild | None:
    if probes.TORCH_FILE not in capture:
        return None
    data = _dict(_json(capture, probes.TORCH_FILE, notes))
    names = data.get("gpu_names")
    backends = data.get("backends")
    return TorchBuild(
        version=_str(data.get("version")), hip=_str(data.get("hip")),
        cuda=_str(data.get("cuda")), nccl_version=_str(data.get("nccl_version")),
        gpu_available=bool(data.get("gpu_available")),
        gpu_count=max(0, _int(data.get("gpu_count")) or 0),
        gpu_names=[str(n) for n in names] if isinstance(names, list) else [],
        backends=[str(b) for b in backends] if isinstance(backends, list) else [],
        error=_str(data.get("error")) or _str(data.get("gpu_error")),
    )


def _interfaces(capture: probes.RawCapture, host: HostInfo) -> list[NetInterface]:
    result = []
    for name in _children(capture, "/sys/class/net"):
        base = f"/sys/class/net/{name}"
        speed = to_int(_sys(capture, f"{base}/speed") or "")
        result.append(NetInterface(
            name=name, operstate=(_sys(capture, f"{base}/operstate") or None),
            speed_mbps=speed if speed is not None and speed > 0 else None,
            mtu=to_int(_sys(capture, f"{base}/mtu") or ""),
            numa_node=_numa(_sys(capture, f"{base}/device/numa_node")),
            addresses=list(host.addresses.get(name, [])),
        ))
    known = {i.name for i in result}
    # Interfaces only known from host.json addresses (e.g. a hand-made bundle).
    result += [NetInterface(name=n, addresses=a) for n, a in host.addresses.items()
               if n not in known]
    return result


def _state_word(text: str | None) -> str | None:
    """sysfs "4: ACTIVE" / "5: LinkUp" -> "ACTIVE" / "LinkUp"."""
    if not text:
        return None
    return text.split(":", 1)[-1].strip() or None


def _rdma_from_sysfs(capture: probes.RawCapture) -> list[RdmaDevice]:
    devices = []
    for name in _children(capture, "/sys/class/infiniband"):
        base = f"/sys/class/infiniband/{name}"
        device = RdmaDevice(name=name, numa_node=_numa(_sys(capture, f"{base}/device/numa_node")),
                            fw_ver=_sys(capture, f"{base}/fw_ver") or None)
        for port_name in _children(capture, f"{base}/ports"):
            number = to_int(port_name)
            if number is None:
                continue
            pdir = f"{base}/ports/{port_name}"
            port = RdmaPort(port=number, state=_state_word(_sys(capture, f"{pdir}/state")),
                            phys_state=_state_word(_sys(capture, f"{pdir}/phys_state")),
                            rate=_sys(capture, f"{pdir}/rate") or None,
                            link_layer=_sys(capture, f"{pdir}/link_layer") or None)
            for index in sorted((to_int(i) for i in _children(capture, f"{pdir}/gids")),
                                key=lambda i: -1 if i is None else i):
                if index is None:
                    continue
                gid = _sys(capture, f"{pdir}/gids/{index}")
                if gid:
                    port.gids.append(Gid(index, gid,
                                         _sys(capture, f"{pdir}/gid_attrs/types/{index}") or None,
                                         _sys(capture, f"{pdir}/gid_attrs/ndevs/{index}") or None))
            device.ports.append(port)
        devices.append(device)
    return devices


def _rdma_from_ibv(text: str, notes: dict[str, list[str]]) -> list[RdmaDevice]:
    parsed = ibv_devinfo.parse_ibv_devinfo(text)
    _note(notes, "ibv_devinfo-v.txt", parsed.warnings)
    devices = []
    for hca in parsed.value:
        device = RdmaDevice(name=hca.hca_id, fw_ver=hca.fw_ver)
        for p in hca.ports:
            state = (p.state or "").upper().removeprefix("PORT_") or None
            rate = " ".join(x for x in (p.active_width, p.active_speed) if x) or None
            port = RdmaPort(port=p.port, state=state, phys_state=p.phys_state, rate=rate,
                            link_layer=p.link_layer)
            port.gids = [Gid(g.index, g.gid, g.type) for g in p.gids]
            device.ports.append(port)
        devices.append(device)
    return devices


def _pci(capture: probes.RawCapture) -> list[PciDevice]:
    devices = []
    for address in _children(capture, "/sys/bus/pci/devices"):
        base = f"/sys/bus/pci/devices/{address}"
        devices.append(PciDevice(address=address,
                                 class_code=(_sys(capture, f"{base}/class") or "").lower() or None,
                                 vendor=(_sys(capture, f"{base}/vendor") or "").lower() or None,
                                 numa_node=_numa(_sys(capture, f"{base}/numa_node"))))
    return devices


_LSPCI_DEVICE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s+(.*)$")


def parse_lspci_acs(text: str) -> AcsInfo:
    """ACS control of every PCI bridge in ``lspci -vvv`` (pure; parsers/ has no lspci yet).

    Device blocks start at column 0 with the address; ``ACSCtl:`` lines sit inside the
    Access Control Services capability. Without root, lspci prints
    "Capabilities: <access denied>" instead, and nothing can be concluded.
    """
    info = AcsInfo(checked=True)
    address = description = None
    for line in text.splitlines():
        match = _LSPCI_DEVICE.match(line)
        if match and not line[:1].isspace():
            address, description = line.split()[0], match.group(2).strip()
            continue
        stripped = line.strip()
        if "<access denied>" in stripped:
            info.access_denied = True
        elif stripped.startswith("ACSCtl:") and address and "bridge" in (description or "").lower():
            info.bridges.append(AcsBridge(address, description or "",
                                          stripped[len("ACSCtl:"):].strip()))
    return info


# --------------------------------------------------------------------------- GPUs


def _gpus_from_library(data: Any) -> list[GpuInfo]:
    gpus = []
    for item in _dict(data).get("gpus") or []:
        if not isinstance(item, dict) or _int(item.get("index")) is None:
            continue
        gpus.append(GpuInfo(index=_int(item.get("index")) or 0, name=_str(item.get("name")),
                            memory_bytes=_int(item.get("memory_bytes")),
                            pci_bus_id=_str(item.get("pci_bus_id")), uuid=_str(item.get("uuid")),
                            serial=_str(item.get("serial")),
                            driver_version=_str(item.get("driver_version")),
                            numa_node=_int(item.get("numa_node"))))
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


def _gpu_sources(capture: probes.RawCapture, notes: dict[str, list[str]]) -> GpuSources:
    """Every GPU list the capture holds: vendor -> [(file, gpus)] in order of preference."""
    amd: list[tuple[str, list[GpuInfo]]] = []
    nvidia: list[tuple[str, list[GpuInfo]]] = []
    library = _json(capture, probes.HW_INVENTORY_FILE, notes)
    if library is not None:
        backend = _dict(library).get("backend")
        target = amd if backend == "amd" else nvidia if backend == "nvidia" else None
        if target is not None:
            target.append((probes.HW_INVENTORY_FILE, _gpus_from_library(library)))
    parsers = (
        ("amd-smi-static.txt", amd_smi.parse_static, amd),
        ("rocm-smi--showproductname.txt", rocm_smi.parse_productname, amd),
        ("rocm-smi--showmeminfo-vram.txt", rocm_smi.parse_showmeminfo, amd),
        ("rocminfo.txt", rocminfo.parse_gpus, amd),
        ("nvidia-smi-query-gpu.csv", nvidia_smi.parse_query_gpu_csv, nvidia),
    )
    for name, parse, target in parsers:
        if name in capture:
            parsed = parse(capture[name])
            _note(notes, name, parsed.warnings)
            target.append((name, list(parsed.value)))
    if "rocm-smi.txt" in capture:
        concise = rocm_smi.parse_concise(capture["rocm-smi.txt"])
        _note(notes, "rocm-smi.txt", concise.warnings)
        amd.append(("rocm-smi.txt", [
            GpuInfo(index=s.index, name=AMD_DEVICE_IDS.get((s.device_id or "").lower()),
                    extra={"device_id": s.device_id} if s.device_id else {})
            for s in concise.value]))
    return {"amd": [s for s in amd if s[1]], "nvidia": [s for s in nvidia if s[1]]}


def _topology(capture: probes.RawCapture, facts: Facts) -> None:
    notes = facts.notes
    order = {"amd": ("amd-smi-topology.txt", "rocm-smi--showtopo.txt"),
             "nvidia": ("nvidia-smi-topo-m.txt",)}
    names = order.get(facts.vendor) or (order["amd"] + order["nvidia"])
    for name in names:
        if name not in capture:
            continue
        if name == "nvidia-smi-topo-m.txt":
            parsed_nv = nvidia_smi.parse_topo_matrix(capture[name])
            _note(notes, name, parsed_nv.warnings)
            topo = parsed_nv.value.topology
            for gpu in range(len(parsed_nv.value.gpu_nic)):
                facts.gpu_nearest_nic[gpu] = parsed_nv.value.nics_near(gpu)
                row = [link for link in parsed_nv.value.gpu_nic[gpu] if link != "unknown"]
                if row:
                    rank = ("pix", "pxb", "phb", "node", "sys")
                    facts.gpu_nic_link[gpu] = min(row, key=lambda x: rank.index(x)
                                                  if x in rank else len(rank))
        else:
            parse = amd_smi.parse_topology if name.startswith("amd-smi") \
                else rocm_smi.parse_showtopo
            parsed = parse(capture[name])
            _note(notes, name, parsed.warnings)
            topo = parsed.value
        if topo.gpus > 0:
            facts.topology, facts.topology_source = topo, name
            return


def _vendor(facts: Facts, sources: GpuSources, capture: probes.RawCapture) -> str:
    if sources["amd"] or "amd-smi-topology.txt" in capture or "rocm-smi--showtopo.txt" in capture:
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


# --------------------------------------------------------------------------- entry point


def facts_from(capture: probes.RawCapture) -> Facts:
    """All facts of one node's capture (live or bundle)."""
    facts = Facts()
    notes = facts.notes
    facts.env = parse_env(capture.get(probes.ENV_FILE, ""))
    facts.tools = _tool_runs(_dict(_json(capture, probes.COMMANDS_FILE, notes)))
    facts.host = _host(capture, notes)
    facts.torch = _torch(capture, notes)
    facts.interfaces = _interfaces(capture, facts.host)
    facts.pci = _pci(capture)
    facts.rdma = _rdma_from_sysfs(capture)
    facts.rdma_source = "sysfs" if facts.rdma else None
    if not facts.rdma and "ibv_devinfo-v.txt" in capture:
        facts.rdma = _rdma_from_ibv(capture["ibv_devinfo-v.txt"], notes)
        facts.rdma_source = "ibv_devinfo-v.txt"
    if "lspci-vvv.txt" in capture:
        facts.acs = parse_lspci_acs(capture["lspci-vvv.txt"])
    _gpus_and_topology(capture, facts)
    _software(capture, facts)
    from collscope.doctor.vendor_output import from_capture

    facts.vendor_output = from_capture(capture)
    return facts


def _tool_runs(commands: dict[str, Any]) -> dict[str, probes.ToolRun]:
    runs = {}
    for name, run in commands.items():
        if isinstance(run, dict):
            seconds = run.get("seconds")
            runs[name] = probes.ToolRun(
                file=str(name), argv=[str(a) for a in run.get("argv") or []],
                status=str(run.get("status") or "unknown"), returncode=_int(run.get("returncode")),
                seconds=float(seconds) if isinstance(seconds, (int, float)) else 0.0,
                path=_str(run.get("path")), stderr=str(run.get("stderr") or ""))
    return runs


def _gpus_and_topology(capture: probes.RawCapture, facts: Facts) -> None:
    """The GPU list (best source, gaps filled from the others), the topology matrix, and each
    GPU's NUMA node (from the vendor tool, the matrix, or its PCI device)."""
    sources = _gpu_sources(capture, facts.notes)
    facts.vendor = _vendor(facts, sources, capture)
    chosen = sources.get(facts.vendor) or []
    if chosen:
        # The longest list leads (a capture may hold an excerpt of one GPU); the others fill
        # in what it lacks, GPU by GPU.
        first = max(range(len(chosen)), key=lambda i: (len(chosen[i][1]), -i))
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
        device = by_bus.get(_full_bdf(gpu.pci_bus_id))
        if gpu.numa_node is None and device is not None:
            gpu.numa_node = device.numa_node


def _software(capture: probes.RawCapture, facts: Facts) -> None:
    """ROCm runtime, UCX, the NCCL/RCCL log and the self-test result."""
    notes = facts.notes
    if "rocminfo.txt" in capture:
        parsed = rocminfo.parse_rocminfo(capture["rocminfo.txt"])
        facts.rocm_runtime = parsed.value.runtime_version
    if "ucx_info-v.txt" in capture:
        parsed_v = ucx_info.parse_ucx_version(capture["ucx_info-v.txt"])
        _note(notes, "ucx_info-v.txt", parsed_v.warnings)
        facts.ucx_version = parsed_v.value
    if "ucx_info-d.txt" in capture:
        parsed_d = ucx_info.parse_ucx_devices(capture["ucx_info-d.txt"])
        _note(notes, "ucx_info-d.txt", parsed_d.warnings)
        facts.ucx_devices = parsed_d.value
    if probes.NCCL_LOG_FILE in capture:
        parsed_n = nccl_debug.parse_nccl_debug(capture[probes.NCCL_LOG_FILE])
        _note(notes, probes.NCCL_LOG_FILE, parsed_n.warnings)
        facts.nccl_log = parsed_n.value
    selftest = _json(capture, probes.SELFTEST_FILE, notes)
    if isinstance(selftest, dict) and selftest.get("status"):
        try:
            facts.selftest = SelfTestResult.from_dict(selftest)
        except TypeError:
            notes.setdefault(probes.SELFTEST_FILE, []).append("unreadable self-test record")


def _full_bdf(bus_id: str | None) -> str:
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


def inventory(facts: Facts) -> dict[str, Any]:
    """The ``inventory`` part of ``--json``: plain data, stable field names."""
    topo = facts.topology
    return {
        "vendor": facts.vendor,
        "gpus": [asdict(g) for g in facts.gpus],
        "gpu_source": facts.gpu_source,
        "topology": None if topo is None else {
            "gpus": topo.gpus, "link_type": topo.link_type, "weight": topo.weight,
            "hops": topo.hops, "numa_node": topo.numa_node, "source": facts.topology_source,
        },
        "driver_version": facts.driver_version,
        "rocm_version": facts.host.rocm_version,
        "rccl_or_nccl_version": facts.rccl_or_nccl_version,
        "torch": None if facts.torch is None else asdict(facts.torch),
        "host": asdict(facts.host),
        "interfaces": [asdict(i) for i in facts.interfaces],
        "rdma": [asdict(d) for d in facts.rdma],
        "ucx": None if facts.ucx_version is None else {
            "version": facts.ucx_version.version, "with_rocm": facts.ucx_version.with_rocm,
            "with_cuda": facts.ucx_version.with_cuda,
            "transports": sorted({t.name for t in (facts.ucx_devices.transports
                                                   if facts.ucx_devices else [])}),
        },
        "env": dict(facts.env),
        "tools": {name: asdict(run) for name, run in facts.tools.items()},
        "selftest": None if facts.selftest is None else facts.selftest.to_dict(),
    }
