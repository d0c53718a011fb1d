"""The records amd-smi metric and xgmi become."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GpuMetrics:
    """One GPU from ``amd-smi metric``; units in the names, None where not reported.

    Activities are percentages; VRAM is in bytes (amd-smi prints MiB as 'MB'); PCIe
    bandwidth in Mb/s as amd-smi reports it. Every leaf as printed is also in ``extra``
    under its dotted path ('pcie.max_packet_size').
    """

    index: int
    gfx_activity_percent: float | None = None
    umc_activity_percent: float | None = None
    mm_activity_percent: float | None = None
    vcn_activity_percent: list[float | None] = field(default_factory=list)
    jpeg_activity_percent: list[float | None] = field(default_factory=list)
    power_w: float | None = None
    temperature_edge_c: float | None = None
    temperature_hotspot_c: float | None = None
    temperature_mem_c: float | None = None
    vram_total_bytes: int | None = None
    vram_used_bytes: int | None = None
    pcie_width: int | None = None
    pcie_speed_gts: float | None = None
    pcie_bandwidth_mbps: float | None = None
    pcie_replay_count: int | None = None
    pcie_replay_rollover_count: int | None = None
    pcie_l0_to_recovery_count: int | None = None
    pcie_nak_sent_count: int | None = None
    pcie_nak_received_count: int | None = None
    ecc_correctable_count: int | None = None
    ecc_uncorrectable_count: int | None = None
    energy_j: float | None = None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class XgmiGpu:
    """One GPU's row of ``amd-smi xgmi``: link rate and the data moved to/from each peer.

    ``read_bytes`` / ``write_bytes`` follow ``peer_bdfs`` (the table's column order, which
    amd-smi prints in GPU order); None where the tool prints N/A (the GPU itself).
    ``link_status`` holds one entry per xGMI link ('up', 'down', 'disabled', or the text as
    printed when unknown).
    """

    index: int
    bdf: str | None = None
    bit_rate_gbps: float | None = None
    max_bandwidth_gbps: float | None = None
    link_type: str | None = None
    peer_bdfs: list[str] = field(default_factory=list)
    read_bytes: list[int | None] = field(default_factory=list)
    write_bytes: list[int | None] = field(default_factory=list)
    link_status: list[str] = field(default_factory=list)
