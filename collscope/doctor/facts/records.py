"""The typed facts of one node: interfaces, RDMA, PCI, torch, host, and Facts itself."""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.doctor import probes
from collscope.doctor.gpu_usage import UsageFacts
from collscope.doctor.recognize import ToolFailure
from collscope.doctor.selftest import SelfTestResult
from collscope.parsers import (
    nccl_debug,
    ucx_info,
)
from collscope.parsers.common import GpuInfo, Topology

SYSFS = probes.SYSFS_DIR
AMD_VENDOR_ID = "0x1002"
NVIDIA_VENDOR_ID = "0x10de"
# AMD Instinct PCI device IDs (rocm-smi's DID column) -> model, for GPU lists without names.
# Sources: rocm-smi --showproductname "Card model" 0x74a1 = MI300X OAM and telegraf's MI100
# capture 0x738c (tests/fixtures/tool-outputs); amdsmi CHANGELOG pairs 0x74a2 with MI308X; Linux
# amdgpu lists 0x740c/0x740f as Aldebaran (MI250X/MI250, MI210); 0x74a5 is MI325X.
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
    link_speed: str | None = None    # sysfs current_link_speed, "16.0 GT/s PCIe"
    link_width: int | None = None    # current_link_width
    max_link_speed: str | None = None  # max_link_speed: what the link can train to
    max_link_width: int | None = None  # max_link_width

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
    # False when the capture holds none of the RDMA sources (sysfs, ibv_devinfo, ibstat):
    # a bundle assembled by hand, where an empty RDMA list says nothing about the node.
    rdma_captured: bool = True
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
    usage: UsageFacts = field(default_factory=UsageFacts)      # memory held, engine busy
    read_as: dict[str, str] = field(default_factory=dict)      # file -> slot, from content
    unrecognised: list[str] = field(default_factory=list)      # files no tool output matched
    shadowed: dict[str, str] = field(default_factory=dict)     # file -> slot already filled
    prefixes: dict[str, str] = field(default_factory=dict)     # file -> launcher prefix stripped
    read_also: dict[str, str] = field(default_factory=dict)    # file -> other slots it fills
    tool_failures: list[ToolFailure] = field(default_factory=list)  # GPU tools' error texts

    @property
    def driver_version(self) -> str | None:
        versions = sorted({g.driver_version for g in self.gpus if g.driver_version})
        if versions:
            return ", ".join(versions)
        return self.host.amdgpu_version if self.vendor == "amd" else self.host.nvidia_driver

    @property
    def driver_source(self) -> str | None:
        """Where ``driver_version`` was read."""
        if any(g.driver_version for g in self.gpus):
            return self.gpu_source
        if self.vendor == "amd":
            return "/sys/module/amdgpu/version" if self.host.amdgpu_version else None
        return "/proc/driver/nvidia/version" if self.host.nvidia_driver else None

    def stack_versions(self) -> list[tuple[str, str, str]]:
        """(what, version, where it was read) of the GPU software stack, each kept apart: the
        CUDA a driver supports is not the CUDA torch or NCCL were built for (an NCCL log's
        "2.18.3+cuda12.2" is NCCL's build; its "cudaDriverVersion 12020" is the driver's)."""
        log = probes.NCCL_LOG_FILE
        found: list[tuple[str, str, str]] = []
        nccl = self.nccl_log
        if self.vendor == "amd":
            if self.host.rocm_version:
                found.append(("ROCm", self.host.rocm_version, "/opt/rocm/.info/version"))
            elif nccl and nccl.rocm_version:
                found.append(("ROCm", nccl.rocm_version, f"{log}: RCCL's ROCm version line"))
            if self.torch and self.torch.hip:
                found.append(("torch built for HIP", self.torch.hip, "torch.version.hip"))
            return found
        if nccl and nccl.cuda_driver_version:
            code = nccl.cuda_driver_version
            found.append(("driver CUDA", f"{code // 1000}.{code % 1000 // 10}",
                          f"{log}: cudaDriverVersion {code}"))
        if self.torch and self.torch.cuda:
            found.append(("torch built for CUDA", self.torch.cuda, "torch.version.cuda"))
        if nccl and nccl.cuda_version:
            found.append(("NCCL built for CUDA", nccl.cuda_version,
                          f"{log}: NCCL version {nccl.version}{nccl.version_suffix or ''}"))
        return found

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
