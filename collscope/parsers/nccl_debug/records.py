"""What an NCCL/RCCL INFO log says, as records: NICs, trees, ranks, the summary."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class NcclNic:
    """A NIC NCCL said it uses: ``[0]mlx5_0:1/IB`` or ``[0]eth0:10.0.0.1<0>``."""

    net: str  # "IB" or "Socket" (or a plugin's name)
    index: int
    name: str
    port: int | None = None
    link: str | None = None  # "IB" / "RoCE" for NET/IB devices
    address: str | None = None  # for NET/Socket devices


@dataclass
class NcclTree:
    """One channel of a rank's tree: ``4/-1/-1->2->1`` = children 4,-1,-1, rank 2, parent 1."""

    channel: int
    text: str
    children: list[int] = field(default_factory=list)
    parent: int | None = None


@dataclass
class NcclRankInfo:
    """What one process/device of the log printed about itself (cheap per-rank facts)."""

    host: str
    pid: int | None  # None where the capture dropped pid:tid
    device: int  # the bracketed number of the line prefix
    rank: int | None = None  # from "comm 0x... rank R nranks N" when printed
    nranks: int | None = None
    bus_id: str | None = None
    network: str | None = None
    trees: list[NcclTree] = field(default_factory=list)
    transport_counts: dict[str, int] = field(default_factory=dict)


@dataclass
class NcclDebugSummary:
    """What an NCCL/RCCL INFO log says the library chose."""

    library: str | None = None  # "NCCL" or "RCCL"
    version: str | None = None  # "2.18.3"
    version_suffix: str | None = None  # "+cuda12.2", "-HEAD:eef7b29"
    # every distinct "2.18.3+cuda12.2" printed: more than one means mixed installs across ranks
    versions_seen: list[str] = field(default_factory=list)
    git_revision: str | None = None  # RCCL "HEAD:eef7b29"
    cuda_version: str | None = None  # from "+cuda12.2"
    cuda_driver_version: int | None = None  # "cudaDriverVersion 12020"
    library_path: str | None = None  # RCCL's "Librccl path"
    hip_version: str | None = None
    rocm_version: str | None = None
    rocr_version: str | None = None
    kernel_version: str | None = None
    hosts: list[str] = field(default_factory=list)
    nranks: int | None = None
    bootstrap_interface: str | None = None
    bootstrap_address: str | None = None
    network: str | None = None  # most frequent "Using network X": "IB", "Socket", ...
    network_counts: dict[str, int] = field(default_factory=dict)
    ib_no_device: bool = False  # "NET/IB : No device found."
    # Why NET/IB could not be used, as logged: "Failed to open libibverbs.so[.1]", ibv_* errors
    ib_failures: list[str] = field(default_factory=list)
    nics: list[NcclNic] = field(default_factory=list)
    oob_interface: str | None = None
    ib_relaxed_ordering: bool | None = None  # the "[RO]" of NET/IB's Using line
    net_plugin: str | None = None  # loaded external plugin name, or "internal"
    coll_plugin: str | None = None
    plugin_messages: list[str] = field(default_factory=list)
    gdr_hca: dict[str, bool] = field(default_factory=dict)  # HCA -> GPU Direct RDMA enabled
    nchannels: int | None = None
    coll_channels: int | None = None
    p2p_channels: int | None = None
    nvls_channels: int | None = None
    collnet_channels: int | None = None
    nvls_available: bool | None = None
    rings: dict[int, list[int]] = field(default_factory=dict)  # channel -> rank order
    # Connection lines per transport as printed ("P2P/IPC", "NET/IB/0/GDRDMA"); a NET
    # connection is logged by both ends ([send] and [receive]), so these count log lines.
    transport_counts: dict[str, int] = field(default_factory=dict)
    transport_kind_counts: dict[str, int] = field(default_factory=dict)  # "P2P", "SHM", "NET"
    gdrdma_used: bool = False
    env: dict[str, str] = field(default_factory=dict)  # "NCCL_X set by environment to Y"
    init_complete: int = 0
    log_warnings: list[str] = field(default_factory=list)  # the log's own WARN lines
    ranks: list[NcclRankInfo] = field(default_factory=list)

    @property
    def uses_socket_only(self) -> bool:
        """True when every rank that reported a network chose Socket (the slow fallback)."""
        return bool(self.network_counts) and set(self.network_counts) == {"Socket"}
