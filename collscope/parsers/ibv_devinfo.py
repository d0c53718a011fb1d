"""Parser for ``ibv_devinfo`` / ``ibv_devinfo -v`` (rdma-core): RDMA adapters and their ports.

A diagnosis needs per port: is it up (PORT_ACTIVE), how fast (width x lane speed), which wire
(InfiniBand or Ethernet, i.e. RoCE), which MTU, and on RoCE which GID index carries RoCE v2 with
an IPv4 address (what NCCL_IB_GID_INDEX must point at). Plain and verbose outputs share the
same ``key:<tabs>value`` layout; the verbose-only capability lists are kept raw.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from collscope.parsers.common import Parsed, to_float, to_int


@dataclass
class GidEntry:
    """One non-empty GID table entry; ``type`` is what ibv_devinfo prints after the comma."""

    index: int
    gid: str
    type: str | None = None  # "RoCE v1" / "RoCE v2"; rdma-core prints none on InfiniBand ports
    ipv4: str | None = None  # the IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d)


@dataclass
class IbPort:
    """One port of an HCA; numbers are None where the field is absent or unreadable."""

    port: int
    state: str | None = None  # PORT_ACTIVE, PORT_DOWN, PORT_INIT, PORT_ARMED
    state_code: int | None = None  # the "(4)" in "PORT_ACTIVE (4)"
    max_mtu: int | None = None
    active_mtu: int | None = None
    sm_lid: int | None = None
    port_lid: int | None = None
    link_layer: str | None = None  # InfiniBand / Ethernet
    active_width: str | None = None  # "4X"
    active_speed: str | None = None  # "50.0 Gbps" (per lane)
    phys_state: str | None = None  # LINK_UP, POLLING, DISABLED ...
    gid_table_len: int | None = None
    gids: list[GidEntry] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def is_active(self) -> bool:
        return self.state == "PORT_ACTIVE"

    @property
    def lanes(self) -> int | None:
        """Lane count from "4X"."""
        if not self.active_width:
            return None
        match = re.match(r"\s*(\d+)\s*X", self.active_width, re.I)
        return int(match.group(1)) if match else None

    @property
    def lane_speed_gbps(self) -> float | None:
        """Per-lane signalling rate from "50.0 Gbps"."""
        if not self.active_speed:
            return None
        match = re.match(r"\s*(\d+(?:\.\d+)?)\s*Gbps", self.active_speed, re.I)
        return to_float(match.group(1)) if match else None

    @property
    def rate_gbps(self) -> float | None:
        """Link rate: lanes x per-lane speed (4X x 50 Gbps = 200 Gb/s HDR)."""
        lanes, speed = self.lanes, self.lane_speed_gbps
        if lanes is None or speed is None:
            return None
        return lanes * speed

    @property
    def roce_v2_ipv4_gids(self) -> list[GidEntry]:
        """RoCE v2 entries carrying an IPv4 address: the usual NCCL_IB_GID_INDEX candidates."""
        return [g for g in self.gids if g.type == "RoCE v2" and g.ipv4]


@dataclass
class HcaInfo:
    """One RDMA adapter (``hca_id``) with its ports."""

    hca_id: str
    transport: str | None = None  # "InfiniBand" (also for RoCE), "iWARP", ...
    fw_ver: str | None = None
    node_guid: str | None = None
    sys_image_guid: str | None = None
    vendor_id: int | None = None  # 0x02c9 Mellanox/NVIDIA, 0x14e4 Broadcom, ...
    vendor_part_id: int | None = None  # 4123 ConnectX-6, 4129 ConnectX-7, ...
    hw_ver: str | None = None
    board_id: str | None = None
    phys_port_cnt: int | None = None
    ports: list[IbPort] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def active_ports(self) -> list[IbPort]:
        return [p for p in self.ports if p.is_active]


def _name_and_code(value: str) -> tuple[str | None, int | None]:
    """("PORT_ACTIVE", 4) from "PORT_ACTIVE (4)"; the code is None when absent."""
    value = value.strip()
    head, marker, tail = value.rpartition("(")
    if marker and tail.endswith(")") and tail[:-1].strip().isdecimal():
        return (head.strip() or None), int(tail[:-1])
    return (value or None), None


def _ipv4_of_gid(gid: str) -> str | None:
    """IPv4 of an IPv4-mapped GID, in either the full or the compressed IPv6 spelling."""
    try:
        address = ipaddress.IPv6Address(gid.strip())
    except (ValueError, ipaddress.AddressValueError):
        return None
    mapped = address.ipv4_mapped
    return str(mapped) if mapped is not None else None


_GID_LINE = re.compile(r"^GID\[\s*(\d+)\]\s*:\s*(\S+?)\s*(?:,\s*(.+?))?\s*$")


def parse_ibv_devinfo(text: str) -> Parsed[list[HcaInfo]]:
    """Parse ``ibv_devinfo [-v]`` into one HcaInfo per ``hca_id:`` block.

    "No IB devices found" is a valid answer (an empty list, no warning).
    """
    hcas: list[HcaInfo] = []
    warnings: list[str] = []
    if not isinstance(text, str):
        return Parsed(hcas, ["input is not text"])
    hca: HcaInfo | None = None
    port: IbPort | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        key = key.strip()
        value = value.strip()
        lower_key = key.lower()
        if lower_key == "hca_id" and sep:
            hca = HcaInfo(hca_id=value or "unknown")
            hcas.append(hca)
            port = None
            continue
        if hca is None:
            if "no ib devices found" in line.lower():
                continue
            warnings.append(f"line {lineno}: text before any hca_id: {line[:60]!r}")
            continue
        gid_match = _GID_LINE.match(line)
        if gid_match:
            if port is None:
                warnings.append(f"line {lineno}: GID outside any port")
                continue
            gid_type = gid_match.group(3)
            port.gids.append(GidEntry(index=int(gid_match.group(1)), gid=gid_match.group(2),
                                      type=gid_type or None,
                                      ipv4=_ipv4_of_gid(gid_match.group(2))))
            continue
        if lower_key == "port" and sep:
            number = to_int(value)
            if number is None:
                warnings.append(f"line {lineno}: unreadable port number {value!r}")
                number = len(hca.ports) + 1
            port = IbPort(port=number)
            hca.ports.append(port)
            continue
        if not sep:
            # Flag lists (BAD_PKEY_CNTR ...) and "tag matching not supported": verbose detail.
            continue
        if port is not None:
            _apply_port_field(port, lower_key, value, lineno, warnings)
        else:
            _apply_hca_field(hca, lower_key, value, lineno, warnings)
    return Parsed(hcas, warnings)


def _apply_hca_field(hca: HcaInfo, key: str, value: str, lineno: int,
                     warnings: list[str]) -> None:
    if key == "transport":
        hca.transport = _name_and_code(value)[0]
    elif key == "fw_ver":
        hca.fw_ver = value or None
    elif key == "node_guid":
        hca.node_guid = value or None
    elif key == "sys_image_guid":
        hca.sys_image_guid = value or None
    elif key == "vendor_id":
        hca.vendor_id = to_int(value)
        if hca.vendor_id is None and value:
            warnings.append(f"line {lineno}: unreadable vendor_id {value!r}")
    elif key == "vendor_part_id":
        hca.vendor_part_id = to_int(value)
    elif key == "hw_ver":
        hca.hw_ver = value or None
    elif key == "board_id":
        hca.board_id = value or None
    elif key == "phys_port_cnt":
        hca.phys_port_cnt = to_int(value)
    elif value:
        hca.attributes[key] = value


def _apply_port_field(port: IbPort, key: str, value: str, lineno: int,
                      warnings: list[str]) -> None:
    if key == "state":
        port.state, port.state_code = _name_and_code(value)
    elif key in ("max_mtu", "active_mtu"):
        mtu = to_int(_name_and_code(value)[0] or "")
        if mtu is None and value:
            warnings.append(f"line {lineno}: unreadable {key} {value!r}")
        setattr(port, key, mtu)
    elif key == "sm_lid":
        port.sm_lid = to_int(value)
    elif key == "port_lid":
        port.port_lid = to_int(value)
    elif key == "link_layer":
        port.link_layer = value or None
    elif key == "active_width":
        port.active_width = _name_and_code(value)[0]
    elif key == "active_speed":
        port.active_speed = _name_and_code(value)[0]
    elif key == "phys_state":
        port.phys_state = _name_and_code(value)[0]
    elif key == "gid_tbl_len":
        port.gid_table_len = to_int(value)
    elif value:
        port.attributes[key] = value
