"""Where the numbers come from: host CPU and memory, NICs, RDMA ports, GPUs, a process tree.

Each source's ``read()`` returns a ``Reading``: gauges (values that mean something on their
own, e.g. ``cpu.percent``) and counters (cumulative totals, e.g. ``net.eth0.rx_bytes``) that
the sampler turns into ``<name>_per_s`` rates. A value the source cannot see is left out of the
reading, never reported as 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from collscope.hw import GpuBackend, GpuMetrics
from collscope.monitor.rates import cpu_busy_percent
from collscope.sysfs import list_dir

SYSFS_INFINIBAND = Path("/sys/class/infiniband")

# Per-port counters in /sys/class/infiniband/<dev>/ports/<port>/counters. The *_data counters
# count 4-byte words (the InfiniBand PortCounters definition), hence the factor 4.
RDMA_PORT_COUNTERS = (
    ("port_rcv_data", "rx_bytes", 4),
    ("port_xmit_data", "tx_bytes", 4),
    ("port_rcv_packets", "rx_packets", 1),
    ("port_xmit_packets", "tx_packets", 1),
)
# Files in hw_counters/ that are settings, not counters.
RDMA_HW_NOT_COUNTERS = frozenset({"lifespan"})


@dataclass
class Reading:
    """One source's values at one instant."""

    gauges: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)


class Source(Protocol):
    """Anything with a name and a ``read()``; ``close()`` is optional."""

    name: str

    def read(self) -> Reading: ...


class HostSource:
    """System-wide CPU busy % (all cores, between this source's previous read and this one) and
    memory. The first read has no previous one, so it reports no ``cpu.percent``.

    The CPU share comes from ``psutil.cpu_times()`` deltas kept here, not from
    ``psutil.cpu_percent(None)``: that one remembers its last reading per thread, so a baseline
    taken in one thread made the sampler thread's first sample read 0.0.
    """

    name = "host"

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self._last_cpu_times: Any = None

    def read(self) -> Reading:
        times = self._psutil.cpu_times()
        previous, self._last_cpu_times = self._last_cpu_times, times
        memory = self._psutil.virtual_memory()
        gauges = {
            "mem.used_bytes": float(memory.used),
            "mem.available_bytes": float(memory.available),
            "mem.total_bytes": float(memory.total),
        }
        busy = None if previous is None else cpu_busy_percent(previous, times)
        if busy is not None:
            gauges["cpu.percent"] = busy
        return Reading(gauges=gauges)


class NetSource:
    """Per-interface byte and drop counters from the kernel (psutil, /proc/net/dev)."""

    name = "net"

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil

    def read(self) -> Reading:
        counters: dict[str, float] = {}
        for iface, c in self._psutil.net_io_counters(pernic=True).items():
            counters[f"net.{iface}.rx_bytes"] = float(c.bytes_recv)
            counters[f"net.{iface}.tx_bytes"] = float(c.bytes_sent)
            counters[f"net.{iface}.rx_drops"] = float(c.dropin)
            counters[f"net.{iface}.tx_drops"] = float(c.dropout)
        return Reading(counters=counters)


def read_int(path: Path) -> int | None:
    """The integer in a sysfs file, or None when it is unreadable or not an integer."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def rdma_counter_files(root: Path) -> list[tuple[str, Path, int]]:
    """(counter name, file, multiplier) for every RDMA port counter under ``root``.

    Names: ``rdma.<dev>.<port>.rx_bytes`` / ``tx_bytes`` / ``rx_packets`` / ``tx_packets`` and
    ``rdma.<dev>.<port>.hw.<counter>`` for the driver's hw_counters.
    """
    files: list[tuple[str, Path, int]] = []
    for dev in list_dir(root):
        for port in list_dir(root / dev / "ports"):
            port_dir = root / dev / "ports" / port
            base = f"rdma.{dev}.{port}"
            for filename, name, scale in RDMA_PORT_COUNTERS:
                path = port_dir / "counters" / filename
                if path.is_file():
                    files.append((f"{base}.{name}", path, scale))
            for filename in list_dir(port_dir / "hw_counters"):
                if filename not in RDMA_HW_NOT_COUNTERS:
                    files.append((f"{base}.hw.{filename}", port_dir / "hw_counters" / filename, 1))
    return files



class RdmaSource:
    """InfiniBand / RoCE port counters from sysfs (``root`` is injectable for tests).

    The file list is found once and found again only when a file disappears, so a sample costs
    one small read per counter.
    """

    name = "rdma"

    def __init__(self, root: Path | str = SYSFS_INFINIBAND) -> None:
        self.root = Path(root)
        self._files: list[tuple[str, Path, int]] | None = None

    def read(self) -> Reading:
        if self._files is None:
            self._files = rdma_counter_files(self.root)
        counters: dict[str, float] = {}
        missing = False
        for name, path, scale in self._files:
            value = read_int(path)
            if value is None:
                missing = missing or not path.exists()
                continue
            counters[name] = float(value * scale)
        if missing:
            self._files = None  # a device went away; look again next time
        return Reading(counters=counters)


# GpuMetrics field -> (metric suffix, is a cumulative counter)
GPU_FIELDS = (
    ("util_percent", "util_percent", False),
    ("mem_util_percent", "mem_util_percent", False),
    ("mem_used_bytes", "mem_used_bytes", False),
    ("mem_total_bytes", "mem_total_bytes", False),
    ("power_w", "power_w", False),
    ("temperature_c", "temperature_c", False),
    ("pcie_rx_bytes_per_s", "pcie_rx_bytes_per_s", False),
    ("pcie_tx_bytes_per_s", "pcie_tx_bytes_per_s", False),
    ("pcie_bytes_per_s", "pcie_bytes_per_s", False),
    ("xgmi_read_bytes", "xgmi_read_bytes", True),
    ("xgmi_write_bytes", "xgmi_write_bytes", True),
    ("nvlink_rx_bytes", "nvlink_rx_bytes", True),
    ("nvlink_tx_bytes", "nvlink_tx_bytes", True),
)


def gpu_reading(metrics: list[GpuMetrics]) -> Reading:
    """Flat ``gpu.<i>.<metric>`` names for a backend's metrics; None fields are left out."""
    reading = Reading()
    for gpu in metrics:
        for attribute, suffix, is_counter in GPU_FIELDS:
            value = getattr(gpu, attribute)
            if value is None:
                continue
            target = reading.counters if is_counter else reading.gauges
            target[f"gpu.{gpu.index}.{suffix}"] = float(value)
    return reading


class GpuSource:
    """GPU metrics through a vendor backend (collscope.hw)."""

    name = "gpu"

    def __init__(self, backend: GpuBackend) -> None:
        self.backend = backend

    def read(self) -> Reading:
        return gpu_reading(self.backend.metrics())

    def close(self) -> None:
        self.backend.close()


class ProcessTreeSource:
    """CPU and resident memory of a process and all its descendants (the wrapped command).

    CPU is a counter of seconds (user + system, plus the children already reaped), so its rate
    ``proc.cpu_seconds_per_s`` is the number of cores busy: 1.0 is one full core. ``pid`` may be
    set after the sampler started (the command starts after the baseline reading).
    """

    name = "proc"

    def __init__(self, pid: int | None = None) -> None:
        import psutil

        self._psutil = psutil
        self.pid = pid

    def read(self) -> Reading:
        if self.pid is None:
            return Reading()
        psutil = self._psutil
        try:
            root = psutil.Process(self.pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.Error:
            return Reading()
        cpu_seconds = rss = 0.0
        alive = 0
        for process in processes:
            try:
                with process.oneshot():
                    times = process.cpu_times()
                    memory = process.memory_info()
            except psutil.Error:
                continue  # exited while we looked
            cpu_seconds += times.user + times.system + times.children_user + times.children_system
            rss += memory.rss
            alive += 1
        if not alive:
            return Reading()
        return Reading(gauges={"proc.rss_bytes": rss, "proc.count": float(alive)},
                       counters={"proc.cpu_seconds": cpu_seconds})
