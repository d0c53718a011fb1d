"""``ibstat`` (infiniband-diags) output: adapters and their ports, as the same records as
``ibv_devinfo`` (``parsers.ibv_devinfo.HcaInfo`` / ``IbPort``).

    CA 'mlx5_0'
            CA type: MT4123
            Number of ports: 1
            Firmware version: 20.37.1700
            Port 1:
                    State: Active
                    Physical state: LinkUp
                    Rate: 200
                    Link layer: InfiniBand

States map to ibv_devinfo's words (Active -> PORT_ACTIVE, LinkUp -> LINK_UP). ``Rate`` is the
link's Gb/s; ibstat does not print the width, so it becomes ``4X`` x ``rate/4 Gbps`` (the usual
4X link: ``rate_gbps`` is the printed rate either way), and stays as printed in
``attributes["rate"]``.
"""

from __future__ import annotations

import re

from collscope.parsers.common import Parsed, to_int
from collscope.parsers.ibv_devinfo import HcaInfo, IbPort

_CA = re.compile(r"^CA\s+'([^']+)'\s*$")
_PORT = re.compile(r"^\s+Port\s+(\d+)\s*:\s*$")
_FIELD = re.compile(r"^\s+([A-Za-z][\w ]*?)\s*:\s*(.*?)\s*$")
_PHYS = {"linkup": "LINK_UP", "polling": "POLLING", "disabled": "DISABLED", "sleep": "SLEEP",
         "portconfigurationtraining": "PORT_CONFIGURATION_TRAINING"}


def looks_like_ibstat(text: str) -> bool:
    return any(_CA.match(line) for line in text.splitlines()[:5]) and "Port " in text


def parse_ibstat(text: str) -> Parsed[list[HcaInfo]]:
    hcas: list[HcaInfo] = []
    warnings: list[str] = []
    port: IbPort | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _CA.match(line)
        if match:
            hcas.append(HcaInfo(hca_id=match.group(1)))
            port = None
            continue
        if not hcas:
            warnings.append(f"line {number}: before any CA '...' line; skipped")
            continue
        match = _PORT.match(line)
        if match:
            port = IbPort(port=int(match.group(1)))
            hcas[-1].ports.append(port)
            continue
        match = _FIELD.match(line)
        if not match:
            warnings.append(f"line {number}: not understood: {line.strip()[:80]!r}")
            continue
        key, value = match.group(1).lower(), match.group(2)
        if port is None:
            _adapter_field(hcas[-1], key, value)
        else:
            _port_field(port, key, value)
    return Parsed(value=hcas, warnings=warnings)


def _adapter_field(hca: HcaInfo, key: str, value: str) -> None:
    if key == "firmware version":
        hca.fw_ver = value
    elif key == "hardware version":
        hca.hw_ver = value
    elif key == "node guid":
        hca.node_guid = value
    elif key == "system image guid":
        hca.sys_image_guid = value
    elif key == "number of ports":
        hca.phys_port_cnt = to_int(value)
    else:
        hca.attributes[key] = value


def _port_field(port: IbPort, key: str, value: str) -> None:
    if key == "state":
        port.state = "PORT_" + value.strip().upper()
    elif key == "physical state":
        port.phys_state = _PHYS.get(value.strip().lower().replace(" ", ""), value.strip())
    elif key == "link layer":
        port.link_layer = value
    elif key == "base lid":
        port.port_lid = to_int(value)
    elif key == "sm lid":
        port.sm_lid = to_int(value)
    elif key == "rate":
        port.attributes["rate"] = value
        rate = to_int(value)
        if rate:
            port.active_width, port.active_speed = "4X", f"{rate / 4:g} Gbps"
    else:
        port.attributes[key] = value
