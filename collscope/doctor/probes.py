"""The I/O edge of doctor: run the cluster tools, read kernel files, note the environment.

Everything doctor knows about a node passes through here as raw text, a ``RawCapture``
(bundle file name -> text), so that a live run and a bundle captured on a cluster are checked
by the same pure code (facts/, rules/). The file names are the bundle's public format
(README, "collscope doctor"): users assemble bundles by hand from outputs they already have.

Robustness rules: every external command runs from an argument list (never a shell), with
stdin closed, in its own session and under a timeout, so a hung ``rocm-smi`` is killed with
its children and cannot hang doctor; a tool that is missing, times out or fails is recorded in
``commands.json`` (a fact the checks report), never raised. Environment variables whose names
suggest secrets are never captured.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from collscope import __version__
from collscope.hw import topology
from collscope.hw.tools import ToolRun, run_command
from collscope.redact import shown_env
from collscope.sysfs import list_dir

RawCapture = dict[str, str]

# Environment captured into env.txt: what shapes collectives, and what hides GPUs.
ENV_PREFIXES = ("NCCL_", "RCCL_", "HSA_", "UCX_", "GLOO_", "TORCH_NCCL_", "TORCH_FR_")
ENV_NAMES = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
             "GPU_DEVICE_ORDINAL")

# Bundle files that are not tool outputs.
ENV_FILE = "env.txt"
COMMANDS_FILE = "commands.json"
HOST_FILE = "host.json"
TORCH_FILE = "torch.json"
SELFTEST_FILE = "selftest.json"
NCCL_LOG_FILE = "nccl-debug.log"
HW_INVENTORY_FILE = "hw-inventory.json"
SYSFS_DIR = "sysfs"

DEFAULT_TOOL_TIMEOUT_S = 20.0
MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class ToolSpec:
    """One command whose output doctor reads, and the bundle file that holds it."""

    file: str
    argv: tuple[str, ...]
    group: str  # amd, nvidia, ucx, rdma, host: which hardware makes it relevant


# What doctor asks nvidia-smi for (csv,noheader,nounits: the units are the ones given here).
# The link's max gen/width as well as the current: an idle GPU drops its link to a lower
# generation to save power (nvidia-smi --help-query-gpu: "The current link generation and
# width. These may be reduced when the GPU is not in use"), so only max says what it can carry.
NVIDIA_QUERY_FIELDS = ("index", "name", "memory.total [MiB]", "memory.used [MiB]",
                       "utilization.gpu [%]", "driver_version", "pci.bus_id", "uuid",
                       "pcie.link.gen.current", "pcie.link.width.current",
                       "pcie.link.gen.max", "pcie.link.width.max")
# Field lists of earlier doctor versions' noheader CSV (bundles collected with them).
NVIDIA_QUERY_FIELD_SETS = (NVIDIA_QUERY_FIELDS, NVIDIA_QUERY_FIELDS[:10])

# Vendor tools run in their machine-readable modes (JSON, CSV); the parsers also read the text
# forms, which is what bundles assembled by hand and pasted outputs hold. File names are the
# bundle format and stay the same whatever the content.
TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("amd-smi-static.txt", ("amd-smi", "static", "--json"), "amd"),
    ToolSpec(topology.AMD_SMI_TOPOLOGY, topology.COMMANDS[topology.AMD_SMI_TOPOLOGY], "amd"),
    ToolSpec("amd-smi-metric.txt", ("amd-smi", "metric", "--json"), "amd"),
    ToolSpec("rocm-smi.txt", ("rocm-smi", "--showuse", "--showmemuse", "--showpower",
                              "--showtemp", "--json"), "amd"),
    ToolSpec("rocm-smi--showproductname.txt", ("rocm-smi", "--showproductname", "--json"),
             "amd"),
    ToolSpec(topology.ROCM_SMI_TOPOLOGY, topology.COMMANDS[topology.ROCM_SMI_TOPOLOGY], "amd"),
    ToolSpec("rocm-smi--showmeminfo-vram.txt", ("rocm-smi", "--showmeminfo", "vram", "--json"),
             "amd"),
    ToolSpec("rocminfo.txt", ("rocminfo",), "amd"),
    ToolSpec(topology.NVIDIA_SMI_TOPOLOGY, topology.COMMANDS[topology.NVIDIA_SMI_TOPOLOGY],
             "nvidia"),
    ToolSpec("nvidia-smi-query-gpu.csv",
             ("nvidia-smi", "--query-gpu=" + ",".join(f.split(" [")[0]
                                                      for f in NVIDIA_QUERY_FIELDS),
              "--format=csv,noheader,nounits"), "nvidia"),
    ToolSpec("ucx_info-v.txt", ("ucx_info", "-v"), "ucx"),
    ToolSpec("ucx_info-d.txt", ("ucx_info", "-d"), "ucx"),
    ToolSpec("ibv_devinfo-v.txt", ("ibv_devinfo", "-v"), "rdma"),
    ToolSpec("lspci-vvv.txt", ("lspci", "-vvv"), "host"),
)

# Single kernel/system files worth a copy (absolute paths; stored under sysfs/).
HOST_FILES = (
    "/proc/sys/kernel/numa_balancing",
    "/proc/cmdline",
    "/sys/devices/system/node/online",
    "/sys/module/amdgpu/version",
    "/opt/rocm/.info/version",
    "/proc/driver/nvidia/version",
)
NET_FILES = ("operstate", "speed", "mtu", "carrier", "device/numa_node")
RDMA_DEVICE_FILES = ("fw_ver", "node_type", "device/numa_node")
RDMA_PORT_FILES = ("state", "phys_state", "rate", "link_layer")
PCI_FILES = ("class", "vendor", "device", "numa_node", "current_link_speed",
             "current_link_width", "max_link_speed", "max_link_width")
# PCI classes whose NUMA node matters: display/3D (GPUs), network, processing accelerators.
PCI_CLASS_PREFIXES = ("0x03", "0x02", "0x12")
MAX_GIDS_PER_PORT = 64
MAX_PCI_DEVICES = 1024


def run_tool(spec: ToolSpec, timeout_s: float,
             path: str | None = None) -> tuple[ToolRun, str | None]:
    """Run one of doctor's tools; (what happened, its stdout or None)."""
    return run_command(spec.argv, timeout_s, path, spec.file)


def capture_env(environ: dict[str, str] | None = None) -> str:
    """env.txt: the communication variables as NAME=value lines, secrets left out
    (``redact.shown_env``)."""
    environ = dict(os.environ) if environ is None else environ
    shown = shown_env({name: value for name, value in environ.items()
                       if name.startswith(ENV_PREFIXES) or name in ENV_NAMES})
    lines = []
    for name in sorted(shown):
        value = shown[name].replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"{name}={value}")
    return "\n".join(lines) + ("\n" if lines else "")


def _read(path: Path, limit: int = MAX_FILE_BYTES) -> str | None:
    """A small kernel file's text; None when absent or unreadable (sysfs raises EINVAL for
    values a device does not have, e.g. the speed of a link that is down)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None



def read_host_files(root: str | os.PathLike[str] = "/") -> RawCapture:
    """Copies of the kernel files the checks read, keyed ``sysfs/<absolute path>``.

    ``root`` lets tests point at a fake tree. Interfaces, RDMA devices and PCI devices are
    listed from their directories; only the few files per entry that a check reads are copied.
    """
    base = Path(root)
    files: RawCapture = {}

    def keep(absolute: str) -> None:
        text = _read(base / absolute.lstrip("/"))
        if text is not None:
            files[f"{SYSFS_DIR}{absolute}"] = text

    for absolute in HOST_FILES:
        keep(absolute)
    for iface in list_dir(base / "sys/class/net"):
        for name in NET_FILES:
            keep(f"/sys/class/net/{iface}/{name}")
    for dev in list_dir(base / "sys/class/infiniband"):
        dev_dir = f"/sys/class/infiniband/{dev}"
        for name in RDMA_DEVICE_FILES:
            keep(f"{dev_dir}/{name}")
        for port in list_dir(base / dev_dir.lstrip("/") / "ports"):
            port_dir = f"{dev_dir}/ports/{port}"
            for name in RDMA_PORT_FILES:
                keep(f"{port_dir}/{name}")
            _keep_gids(base, port_dir, files)
    for address in list_dir(base / "sys/bus/pci/devices")[:MAX_PCI_DEVICES]:
        dev_dir = f"/sys/bus/pci/devices/{address}"
        pci_class = _read(base / dev_dir.lstrip("/") / "class")
        if pci_class is None or not pci_class.strip().lower().startswith(PCI_CLASS_PREFIXES):
            continue
        for name in PCI_FILES:
            keep(f"{dev_dir}/{name}")
    return files


def _keep_gids(base: Path, port_dir: str, files: RawCapture) -> None:
    """Non-empty GID entries with their RoCE type and netdev (the RoCE GID-index facts)."""
    indices = [i for i in list_dir(base / port_dir.lstrip("/") / "gids") if i.isdigit()]
    kept = 0
    for index in sorted(indices, key=int):
        gid = _read(base / port_dir.lstrip("/") / "gids" / index)
        if gid is None or not gid.strip() or set(gid.strip()) <= {"0", ":"}:
            continue
        files[f"{SYSFS_DIR}{port_dir}/gids/{index}"] = gid
        for attr in ("types", "ndevs"):
            text = _read(base / port_dir.lstrip("/") / "gid_attrs" / attr / index)
            if text is not None:
                files[f"{SYSFS_DIR}{port_dir}/gid_attrs/{attr}/{index}"] = text
        kept += 1
        if kept >= MAX_GIDS_PER_PORT:
            break


def host_info(root: str | os.PathLike[str] = "/") -> dict[str, Any]:
    """host.json: identity, kernel, CPU vendor, locked-memory limit, IOMMU groups, addresses."""
    base = Path(root)
    cpu_vendor = cpu_model = None
    for line in (_read(base / "proc/cpuinfo", 64 * 1024) or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "vendor_id" and cpu_vendor is None:
            cpu_vendor = value.strip()
        elif key.strip() == "model name" and cpu_model is None:
            cpu_model = value.strip()
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_vendor": cpu_vendor,
        "cpu_model": cpu_model,
        # -1 = unlimited (RLIM_INFINITY), the value RDMA memory registration wants.
        "memlock_soft": -1 if soft == resource.RLIM_INFINITY else soft,
        "memlock_hard": -1 if hard == resource.RLIM_INFINITY else hard,
        "iommu_groups": len(list_dir(base / "sys/kernel/iommu_groups")),
        "is_root": os.geteuid() == 0,
        "addresses": _addresses(),
        "python": platform.python_version(),
        "collscope": __version__,
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _addresses() -> dict[str, list[str]]:
    try:
        import psutil

        return {name: [a.address for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6)]
                for name, addrs in sorted(psutil.net_if_addrs().items())}
    except Exception:  # psutil missing or a platform without interface listing
        return {}


def torch_info() -> dict[str, Any]:
    """torch.json: the torch build and what it sees. Imports torch (about a second)."""
    try:
        import torch
        import torch.distributed as dist
    except Exception as error:  # a broken torch install is a finding, not a crash
        return {"error": f"import torch failed: {error}"}
    info: dict[str, Any] = {
        "version": torch.__version__,
        "hip": getattr(torch.version, "hip", None),
        "cuda": getattr(torch.version, "cuda", None),
        "gpu_available": False, "gpu_count": 0, "gpu_names": [], "gpu_memory_bytes": [],
        "nccl_version": None, "backends": [],
    }
    try:
        info["gpu_available"] = bool(torch.cuda.is_available())
        info["gpu_count"] = torch.cuda.device_count() if info["gpu_available"] else 0
        for index in range(info["gpu_count"]):
            props = torch.cuda.get_device_properties(index)
            info["gpu_names"].append(props.name)
            info["gpu_memory_bytes"].append(int(props.total_memory))
    except Exception as error:
        info["gpu_error"] = str(error)
    checks = {"nccl": "is_nccl_available", "gloo": "is_gloo_available",
              "mpi": "is_mpi_available", "ucc": "is_ucc_available"}
    info["backends"] = [name for name, fn in checks.items()
                        if getattr(dist, fn, lambda: False)()]
    if "nccl" in info["backends"]:
        try:
            version = torch.cuda.nccl.version()
            info["nccl_version"] = (".".join(map(str, version)) if isinstance(version, tuple)
                                    else str(version))
        except Exception:  # an RCCL/NCCL build that cannot report its version
            pass
    return info


def hw_inventory(timeout_s: float) -> dict[str, Any] | None:
    """hw-inventory.json through the vendor library (amdsmi / NVML) when one sees GPUs.

    Library initialisation can block on a wedged driver, so it runs on a daemon thread that
    is abandoned after ``timeout_s``.
    """
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            from collscope.hw import detect_backend

            with detect_backend() as backend:
                if backend.name != "none":
                    result["backend"] = backend.name
                    result["gpus"] = [asdict(gpu) for gpu in backend.inventory()]
        except Exception as error:  # a library that fails is reported by its absence
            result["error"] = str(error)

    thread = threading.Thread(target=work, name="collscope-hw-inventory", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return {"error": f"vendor library did not answer within {timeout_s:g} s"}
    return result if result.get("gpus") or result.get("error") else None


def capture(tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
            tools: Iterable[ToolSpec] = TOOLS, root: str | os.PathLike[str] = "/",
            environ: dict[str, str] | None = None, path: str | None = None,
            with_torch: bool = True,
            extra: Callable[[], RawCapture] | None = None) -> RawCapture:
    """Everything about this node, as bundle files. Tools run in parallel with the rest.

    ``path`` replaces PATH for finding tools (tests); ``extra`` adds files computed alongside
    (e.g. the self-test) while the tools run.
    """
    files: RawCapture = {}
    commands: dict[str, dict[str, Any]] = {}
    tools = list(tools)
    with ThreadPoolExecutor(max_workers=max(1, len(tools) + 1),
                            thread_name_prefix="collscope-probe") as pool:
        runs = [pool.submit(run_tool, spec, tool_timeout_s, path) for spec in tools]
        library = pool.submit(hw_inventory, min(tool_timeout_s, 10.0))
        files[ENV_FILE] = capture_env(environ)
        files.update(read_host_files(root))
        files[HOST_FILE] = json.dumps(host_info(root), indent=1, sort_keys=True)
        if with_torch:
            files[TORCH_FILE] = json.dumps(torch_info(), indent=1, sort_keys=True)
        if extra is not None:
            files.update(extra())
        for future in runs:
            run, text = future.result()
            commands[run.file] = asdict(run)
            if text is not None:
                files[run.file] = text
        inventory = library.result()
        if inventory is not None:
            files[HW_INVENTORY_FILE] = json.dumps(inventory, indent=1, sort_keys=True)
        from collscope.doctor.vendor_output import capture_files

        files.update(capture_files())  # what vendor libraries printed while loading
    files[COMMANDS_FILE] = json.dumps(commands, indent=1, sort_keys=True)
    return files
