"""``amd-smi static`` and ``amd-smi metric``."""

from __future__ import annotations

from typing import Any

from collscope.parsers.amd_smi.records import GpuMetrics
from collscope.parsers.amd_smi.shapes import load_gpus
from collscope.parsers.amd_smi.values import (
    bytes_of,
    first_of,
    flatten,
    float_of,
    get_in,
    int_of,
    list_of,
    text_of,
)
from collscope.parsers.common import GpuInfo, Parsed


def parse_static(text: str) -> Parsed[list[GpuInfo]]:
    """``amd-smi static`` (any subset: --asic, --bus, --vbios, --driver, --board...).

    Text or ``--json``. ``name`` is the ASIC market name (board product name as fallback);
    ``memory_bytes`` the VRAM size; every leaf is also in ``extra`` by dotted path
    ('asic.device_id', 'asic.target_graphics_version', 'asic.num_compute_units'...).
    """
    warnings: list[str] = []
    gpus = load_gpus(text, warnings)
    infos = []
    for index in sorted(gpus):
        node = gpus[index]
        info = GpuInfo(index=index)
        info.name = text_of(first_of(node, ("asic", "market_name"), ("board", "product_name")))
        info.pci_bus_id = text_of(first_of(node, ("bus", "bdf"), ("bdf",)))
        info.serial = text_of(first_of(node, ("asic", "asic_serial"), ("board", "product_serial")))
        info.uuid = text_of(node.get("uuid"))
        info.driver_version = text_of(first_of(node, ("driver", "version"), ("driver_version",)))
        info.vbios = text_of(
            first_of(
                node,
                ("vbios", "version"),
                ("ifwi", "version"),
                ("vbios", "part_number"),
                ("ifwi", "part_number"),
            )
        )
        info.memory_bytes = bytes_of(get_in(node, "vram", "size"), "MB")
        info.numa_node = int_of(get_in(node, "numa", "node"))
        info.extra = {k: v for k, v in flatten(node).items() if k and k != "gpu"}
        infos.append(info)
    return Parsed(infos, warnings)


# --------------------------------------------------------------------------- metric


def _metrics_of(index: int, node: dict[str, Any]) -> GpuMetrics:
    # amd-smi's metric JSON, a line per field: the lines' one shape is the mapping, not logic.
    m = GpuMetrics(index=index)
    usage = node.get("usage")
    m.gfx_activity_percent = float_of(get_in(usage, "gfx_activity"))
    m.umc_activity_percent = float_of(get_in(usage, "umc_activity"))
    m.mm_activity_percent = float_of(get_in(usage, "mm_activity"))
    m.vcn_activity_percent = list_of(get_in(usage, "vcn_activity"))
    m.jpeg_activity_percent = list_of(get_in(usage, "jpeg_activity"))
    m.power_w = float_of(
        first_of(
            node,
            ("power", "socket_power"),
            ("power", "current_socket_power"),
            ("power", "average_socket_power"),
        )
    )
    m.temperature_edge_c = float_of(get_in(node, "temperature", "edge"))
    m.temperature_hotspot_c = float_of(
        first_of(node, ("temperature", "hotspot"), ("temperature", "junction"))
    )
    m.temperature_mem_c = float_of(first_of(node, ("temperature", "mem"), ("temperature", "vram")))
    m.vram_total_bytes = bytes_of(get_in(node, "mem_usage", "total_vram"), "MB")
    m.vram_used_bytes = bytes_of(get_in(node, "mem_usage", "used_vram"), "MB")
    pcie = node.get("pcie")
    m.pcie_width = int_of(get_in(pcie, "width"))
    m.pcie_speed_gts = float_of(get_in(pcie, "speed"))
    m.pcie_bandwidth_mbps = float_of(get_in(pcie, "bandwidth"))
    m.pcie_replay_count = int_of(get_in(pcie, "replay_count"))
    m.pcie_replay_rollover_count = int_of(get_in(pcie, "replay_roll_over_count"))
    m.pcie_l0_to_recovery_count = int_of(get_in(pcie, "l0_to_recovery_count"))
    m.pcie_nak_sent_count = int_of(get_in(pcie, "nak_sent_count"))
    m.pcie_nak_received_count = int_of(get_in(pcie, "nak_received_count"))
    m.ecc_correctable_count = int_of(get_in(node, "ecc", "total_correctable_count"))
    m.ecc_uncorrectable_count = int_of(get_in(node, "ecc", "total_uncorrectable_count"))
    m.energy_j = float_of(get_in(node, "energy", "total_energy_consumption"))
    m.extra = {k: v for k, v in flatten(node).items() if k and k != "gpu"}
    return m


def parse_metric(text: str) -> Parsed[list[GpuMetrics]]:
    """``amd-smi metric`` (or any of -u/-p/-t/-m/-P/-e/-E), text or ``--json``."""
    warnings: list[str] = []
    gpus = load_gpus(text, warnings)
    return Parsed([_metrics_of(index, gpus[index]) for index in sorted(gpus)], warnings)
