"""NVIDIA GPUs through NVML (the ``nvidia-ml-py`` package, imported as ``pynvml``).

Shapes used: ``nvmlDeviceGetUtilizationRates`` -> struct with ``.gpu`` and ``.memory`` (%),
``nvmlDeviceGetMemoryInfo`` -> ``.used`` / ``.total`` (bytes), ``nvmlDeviceGetPowerUsage`` ->
mW, ``nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU)`` -> degrees C,
``nvmlDeviceGetPcieThroughput(h, NVML_PCIE_UTIL_RX_BYTES | NVML_PCIE_UTIL_TX_BYTES)`` -> KB/s
(NVML samples it over 20 ms), and ``nvmlDeviceGetFieldValues`` with
``NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX/TX`` at scope UINT_MAX -> KiB summed over all links.
Errors are ``NVMLError`` subclasses (``NVMLError_NotSupported`` and friends).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from collscope.hw.backend import GpuBackend, GpuMetrics
from collscope.hw.tools import ToolRunner, tool_output
from collscope.parsers.common import GpuInfo, Topology

INSTALL_HINT = "the NVIDIA backend needs NVML's Python bindings: pip install collscope[nvidia]"
KIB = 1024
# nvml.h values, for pynvml versions that predate the named constants.
FI_NVLINK_THROUGHPUT_DATA_TX = 138
FI_NVLINK_THROUGHPUT_DATA_RX = 139
ALL_LINKS_SCOPE = 0xFFFFFFFF   # scopeId UINT_MAX: summed over every NVLink
NVML_SUCCESS = 0


def load_pynvml() -> Any:
    """Import pynvml here and nowhere else; a missing library says how to install it."""
    from collscope.hw.capture import captured

    try:
        with captured("pynvml"):
            import pynvml  # optional: collscope[nvidia]
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    return pynvml


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


class NvidiaBackend(GpuBackend):
    """NVML, initialised on first use; GPU indices are NVML's (PCI bus order, as nvidia-smi)."""

    name = "nvidia"

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._pool: ThreadPoolExecutor | None = None

    def _library(self) -> Any:
        if self._nvml is None:
            from collscope.hw.capture import captured

            nvml = load_pynvml()
            with captured("pynvml"):
                nvml.nvmlInit()
            self._nvml = nvml
            count = self._query("nvmlDeviceGetCount") or 0
            handles = (self._query("nvmlDeviceGetHandleByIndex", i) for i in range(count))
            self._handles = [h for h in handles if h is not None]
        return self._nvml

    def _query(self, function: str, *args: Any) -> Any:
        """Every NVML call goes through here: NVMLError (NotSupported, NoPermission, GpuIsLost,
        ...) and functions this pynvml version lacks become None."""
        nvml = self._nvml
        call = getattr(nvml, function, None)
        if call is None:
            return None
        try:
            return call(*args)
        except nvml.NVMLError:
            return None

    def available(self) -> bool:
        try:
            self._library()
        except Exception:  # no library, no driver: simply not this backend
            return False
        return bool(self._handles)

    def inventory(self) -> list[GpuInfo]:
        self._library()
        driver = _text(self._query("nvmlSystemGetDriverVersion"))
        gpus = []
        for index, handle in enumerate(self._handles):
            memory = self._query("nvmlDeviceGetMemoryInfo", handle)
            pci = self._query("nvmlDeviceGetPciInfo", handle)
            gpus.append(GpuInfo(
                index=index,
                name=_text(self._query("nvmlDeviceGetName", handle)),
                memory_bytes=None if memory is None else int(memory.total),
                pci_bus_id=None if pci is None else _text(pci.busId),
                uuid=_text(self._query("nvmlDeviceGetUUID", handle)),
                driver_version=driver,
            ))
        return gpus

    def metrics(self) -> list[GpuMetrics]:
        """All GPUs at once. NVML measures PCIe throughput over a 20 ms window per call (two
        calls per GPU), so reading GPUs one after another would grow with their count; they
        are read in parallel instead (NVML is thread-safe, ctypes releases the GIL)."""
        nvml = self._library()
        if len(self._handles) < 2:
            return [self._one(nvml, index, handle) for index, handle in enumerate(self._handles)]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=len(self._handles),
                                            thread_name_prefix="collscope-nvml")
        return list(self._pool.map(lambda item: self._one(nvml, *item),
                                   enumerate(self._handles)))

    def _one(self, nvml: Any, index: int, handle: Any) -> GpuMetrics:
        utilization = self._query("nvmlDeviceGetUtilizationRates", handle)
        memory = self._query("nvmlDeviceGetMemoryInfo", handle)
        power_mw = self._query("nvmlDeviceGetPowerUsage", handle)
        temperature = self._query("nvmlDeviceGetTemperature", handle,
                                  getattr(nvml, "NVML_TEMPERATURE_GPU", 0))
        rx_kb = self._query("nvmlDeviceGetPcieThroughput", handle,
                            getattr(nvml, "NVML_PCIE_UTIL_RX_BYTES", 1))
        tx_kb = self._query("nvmlDeviceGetPcieThroughput", handle,
                            getattr(nvml, "NVML_PCIE_UTIL_TX_BYTES", 0))
        nvlink_rx, nvlink_tx = self._nvlink_bytes(nvml, handle)
        return GpuMetrics(
            index=index,
            util_percent=None if utilization is None else float(utilization.gpu),
            mem_util_percent=None if utilization is None else float(utilization.memory),
            mem_used_bytes=None if memory is None else int(memory.used),
            mem_total_bytes=None if memory is None else int(memory.total),
            power_w=None if power_mw is None else power_mw / 1000.0,
            temperature_c=None if temperature is None else float(temperature),
            pcie_rx_bytes_per_s=None if rx_kb is None else float(rx_kb * KIB),
            pcie_tx_bytes_per_s=None if tx_kb is None else float(tx_kb * KIB),
            nvlink_rx_bytes=nvlink_rx,
            nvlink_tx_bytes=nvlink_tx,
        )

    def _nvlink_bytes(self, nvml: Any, handle: Any) -> tuple[int | None, int | None]:
        """NVLink data counters summed over links, in bytes; (None, None) without NVLink.

        One field-values call reads both directions; a field the GPU does not support comes
        back with a non-success ``nvmlReturn`` instead of raising.
        """
        fields = [
            (getattr(nvml, "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX", FI_NVLINK_THROUGHPUT_DATA_RX),
             ALL_LINKS_SCOPE),
            (getattr(nvml, "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX", FI_NVLINK_THROUGHPUT_DATA_TX),
             ALL_LINKS_SCOPE),
        ]
        values = self._query("nvmlDeviceGetFieldValues", handle, fields)
        if values is None or len(values) != 2:
            return None, None
        success = getattr(nvml, "NVML_SUCCESS", NVML_SUCCESS)
        rx, tx = (int(v.value.ullVal) * KIB if v.nvmlReturn == success else None
                  for v in values)
        return rx, tx

    def topology(self) -> Topology | None:
        """GPU x GPU links from ``nvidia-smi topo -m`` (installed with the driver)."""
        return smi_topology()

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        nvml, self._nvml = self._nvml, None
        self._handles = []
        if nvml is not None:
            try:
                nvml.nvmlShutdown()
            except nvml.NVMLError:
                pass


# --------------------------------------------------------------------------- nvidia-smi
# Fallback when NVML's Python bindings are not installed: nvidia-smi's CSV queries and
# `topo -m` through collscope's parsers (argument lists, a timeout, None on any trouble).

INVENTORY_FIELDS = "index,name,memory.total,driver_version,pci.bus_id,uuid,vbios_version"
METRIC_FIELDS = ("index,utilization.gpu,utilization.memory,memory.used,memory.total,"
                 "power.draw,temperature.gpu")


def _csv_number(gpu: GpuInfo, field: str) -> float | None:
    """A number from a query-gpu extra field such as "97 %" or "350.12 W"; None otherwise."""
    value = gpu.extra.get(field, "").split()
    try:
        return float(value[0]) if value else None
    except ValueError:
        return None


class NvidiaSmiBackend(GpuBackend):
    """NVIDIA GPUs through nvidia-smi (indices as nvidia-smi prints them)."""

    name = "nvidia"

    def __init__(self, run: ToolRunner | None = None) -> None:
        self._run: ToolRunner = run or tool_output
        self._gpus: list[GpuInfo] | None = None

    def _query(self, fields: str) -> list[GpuInfo]:
        from collscope.parsers.nvidia_smi import parse_query_gpu_csv

        text = self._run(("nvidia-smi", f"--query-gpu={fields}", "--format=csv"))
        return list(parse_query_gpu_csv(text).value) if text else []

    def inventory(self) -> list[GpuInfo]:
        if self._gpus is None:
            self._gpus = self._query(INVENTORY_FIELDS)
        return self._gpus

    def metrics(self) -> list[GpuMetrics]:
        rows = []
        for gpu in self._query(METRIC_FIELDS):
            rows.append(GpuMetrics(
                index=gpu.index,
                util_percent=_csv_number(gpu, "utilization.gpu"),
                mem_util_percent=_csv_number(gpu, "utilization.memory"),
                mem_used_bytes=gpu.memory_used_bytes, mem_total_bytes=gpu.memory_bytes,
                power_w=_csv_number(gpu, "power.draw"),
                temperature_c=_csv_number(gpu, "temperature.gpu")))
        return rows

    def topology(self) -> Topology | None:
        return smi_topology(self._run)


def smi_topology(run: ToolRunner | None = None) -> Topology | None:
    """GPU x GPU links (NVLink counts as weights) from ``nvidia-smi topo -m``."""
    from collscope.parsers.nvidia_smi import parse_topo_matrix

    text = (run or tool_output)(("nvidia-smi", "topo", "-m"))
    if not text:
        return None
    topology = parse_topo_matrix(text).value.topology
    return topology if topology.gpus > 0 else None
