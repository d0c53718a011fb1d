"""Host, torch, network interfaces, RDMA devices (sysfs, ibv_devinfo, ibstat), PCI and ACS."""

from __future__ import annotations

import re

from collscope.doctor import probes, recognize
from collscope.doctor.facts.common import (
    add_notes,
    as_dict,
    as_int,
    as_str,
    numa_of,
    read_json,
    sys_children,
    sys_text,
)
from collscope.doctor.facts.records import (  # facts/__init__.py re-exports the same
    AcsBridge,
    AcsInfo,
    Gid,
    HostInfo,
    NetInterface,
    PciDevice,
    RdmaDevice,
    RdmaPort,
    TorchBuild,
)
from collscope.parsers import (
    ibstat,
    ibv_devinfo,
)
from collscope.parsers.common import to_int


def host_info(capture: probes.RawCapture, notes: dict[str, list[str]]) -> HostInfo:
    data = as_dict(read_json(capture, probes.HOST_FILE, notes))
    host = HostInfo(
        hostname=as_str(data.get("hostname")), kernel=as_str(data.get("kernel")),
        cpu_vendor=as_str(data.get("cpu_vendor")), memlock_soft=as_int(data.get("memlock_soft")),
        memlock_hard=as_int(data.get("memlock_hard")),
        iommu_groups=as_int(data.get("iommu_groups")),
        is_root=data.get("is_root") if isinstance(data.get("is_root"), bool) else None,
    )
    addresses = data.get("addresses")
    if isinstance(addresses, dict):
        host.addresses = {str(k): [str(a) for a in v] for k, v in addresses.items()
                          if isinstance(v, list)}
    host.numa_balancing = to_int(sys_text(capture, "/proc/sys/kernel/numa_balancing") or "")
    host.cmdline = sys_text(capture, "/proc/cmdline")
    online = sys_text(capture, "/sys/devices/system/node/online")
    if online:
        host.numa_nodes = _count_cpulist(online)
    host.amdgpu_version = sys_text(capture, "/sys/module/amdgpu/version") or None
    host.rocm_version = sys_text(capture, "/opt/rocm/.info/version") or None
    nvidia = sys_text(capture, "/proc/driver/nvidia/version")
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


def torch_build(capture: probes.RawCapture, notes: dict[str, list[str]]) -> TorchBuild | None:
    if probes.TORCH_FILE not in capture:
        return None
    data = as_dict(read_json(capture, probes.TORCH_FILE, notes))
    names = data.get("gpu_names")
    backends = data.get("backends")
    return TorchBuild(
        version=as_str(data.get("version")), hip=as_str(data.get("hip")),
        cuda=as_str(data.get("cuda")), nccl_version=as_str(data.get("nccl_version")),
        gpu_available=bool(data.get("gpu_available")),
        gpu_count=max(0, as_int(data.get("gpu_count")) or 0),
        gpu_names=[str(n) for n in names] if isinstance(names, list) else [],
        backends=[str(b) for b in backends] if isinstance(backends, list) else [],
        error=as_str(data.get("error")) or as_str(data.get("gpu_error")),
    )


def net_interfaces(capture: probes.RawCapture, host: HostInfo) -> list[NetInterface]:
    result = []
    for name in sys_children(capture, "/sys/class/net"):
        base = f"/sys/class/net/{name}"
        speed = to_int(sys_text(capture, f"{base}/speed") or "")
        result.append(NetInterface(
            name=name, operstate=(sys_text(capture, f"{base}/operstate") or None),
            speed_mbps=speed if speed is not None and speed > 0 else None,
            mtu=to_int(sys_text(capture, f"{base}/mtu") or ""),
            numa_node=numa_of(sys_text(capture, f"{base}/device/numa_node")),
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


def rdma_from_sysfs(capture: probes.RawCapture) -> list[RdmaDevice]:
    devices = []
    for name in sys_children(capture, "/sys/class/infiniband"):
        base = f"/sys/class/infiniband/{name}"
        device = RdmaDevice(name=name,
                            numa_node=numa_of(sys_text(capture, f"{base}/device/numa_node")),
                            fw_ver=sys_text(capture, f"{base}/fw_ver") or None)
        for port_name in sys_children(capture, f"{base}/ports"):
            number = to_int(port_name)
            if number is None:
                continue
            pdir = f"{base}/ports/{port_name}"
            port = RdmaPort(port=number, state=_state_word(sys_text(capture, f"{pdir}/state")),
                            phys_state=_state_word(sys_text(capture, f"{pdir}/phys_state")),
                            rate=sys_text(capture, f"{pdir}/rate") or None,
                            link_layer=sys_text(capture, f"{pdir}/link_layer") or None)
            for index in sorted((to_int(i) for i in sys_children(capture, f"{pdir}/gids")),
                                key=lambda i: -1 if i is None else i):
                if index is None:
                    continue
                gid = sys_text(capture, f"{pdir}/gids/{index}")
                if gid:
                    kind = sys_text(capture, f"{pdir}/gid_attrs/types/{index}") or None
                    ndev = sys_text(capture, f"{pdir}/gid_attrs/ndevs/{index}") or None
                    port.gids.append(Gid(index, gid, kind, ndev))
            device.ports.append(port)
        devices.append(device)
    return devices


def rdma_from_tool(text: str, notes: dict[str, list[str]],
                   name: str = "ibv_devinfo-v.txt") -> list[RdmaDevice]:
    parse = ibstat.parse_ibstat if name == recognize.IBSTAT else ibv_devinfo.parse_ibv_devinfo
    parsed = parse(text)
    add_notes(notes, name, parsed.warnings)
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


def pci_devices(capture: probes.RawCapture) -> list[PciDevice]:
    devices = []
    for address in sys_children(capture, "/sys/bus/pci/devices"):
        base = f"/sys/bus/pci/devices/{address}"
        devices.append(PciDevice(address=address,
                                 class_code=(sys_text(capture, f"{base}/class") or "").lower()
                                 or None,
                                 vendor=(sys_text(capture, f"{base}/vendor") or "").lower() or None,
                                 numa_node=numa_of(sys_text(capture, f"{base}/numa_node")),
                                 link_speed=sys_text(capture, f"{base}/current_link_speed"),
                                 link_width=to_int(sys_text(capture, f"{base}/current_link_width")
                                                   or ""),
                                 max_link_speed=sys_text(capture, f"{base}/max_link_speed"),
                                 max_link_width=to_int(sys_text(capture, f"{base}/max_link_width")
                                                       or "")))
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
