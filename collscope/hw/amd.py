"""AMD GPUs through the ``amdsmi`` Python library (ROCm's AMD SMI).

Shapes used (amdsmi_interface.py, ROCm 6.x): every getter takes a processor handle and returns
a dict; values the hardware does not report come back as the string "N/A" (the library maps
all-ones sentinels such as 0xFFFF to it) or raise AmdSmiLibraryException with
AMDSMI_STATUS_NOT_SUPPORTED. Units: ``amdsmi_get_gpu_vram_usage`` in MiB,
``amdsmi_get_gpu_metrics_info`` power in W, temperatures in degrees C, ``pcie_bandwidth_inst``
in GB/s (both directions together), ``xgmi_read_data_acc`` / ``xgmi_write_data_acc`` per-link
lists of accumulated KB.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from collscope.hw.backend import GpuBackend, GpuMetrics
from collscope.hw.tools import ToolRunner, tool_output
from collscope.parsers.common import GpuInfo, Topology

INSTALL_HINT = ("the AMD backend needs the amdsmi Python library: pip install collscope[amd] "
                "(or add ROCm's copy, /opt/rocm/share/amd_smi, to PYTHONPATH)")
MIB = 1024 * 1024
KIB = 1024
GB = 1_000_000_000
# Values the library returns instead of a number when a metric is absent.
ABSENT_STRINGS = ("n/a", "not supported", "not_supported", "unsupported", "")


MISSING_LIBRARY_HINT = ("amdsmi is installed but its library is missing: install ROCm's "
                        "amd-smi-lib (libamd_smi.so) or set ROCM_PATH to the ROCm install")


def load_amdsmi() -> Any:
    """Import amdsmi here and nowhere else; a missing package says how to install it.

    Without libamd_smi.so, amdsmi 7.x prints to stdout and then fails with KeyError (not
    ImportError): both are caught here (what it printed goes to collscope.hw.capture).
    """
    from collscope.hw.capture import captured

    try:
        with captured("amdsmi"):
            import amdsmi  # optional: collscope[amd]
    except ModuleNotFoundError as error:
        if error.name == "amdsmi":
            raise ImportError(INSTALL_HINT) from error
        raise ImportError(f"{MISSING_LIBRARY_HINT} ({error})") from error
    except Exception as error:  # the bindings load libamd_smi.so at import time
        raise ImportError(f"{MISSING_LIBRARY_HINT} ({type(error).__name__}: {error})") \
            from error
    return amdsmi


def number(value: Any) -> float | int | None:
    """A numeric amdsmi value, or None for "N/A", missing keys and anything non-numeric."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    return None


def link_total(values: Any, unit: int) -> int | None:
    """Sum of a per-link counter list (``xgmi_read_data_acc``), unused links ("N/A") skipped.

    None when no link reports a number: an absent counter must not read as 0 bytes.
    """
    if not isinstance(values, (list, tuple)):
        single = number(values)
        return None if single is None else int(single * unit)
    numbers = [n for n in (number(v) for v in values) if n is not None]
    return int(sum(numbers) * unit) if numbers else None


def first_number(data: dict[str, Any], *keys: str) -> float | int | None:
    """The first of ``keys`` that holds a number (e.g. current, then average socket power)."""
    for key in keys:
        value = number(data.get(key))
        if value is not None:
            return value
    return None


class AmdBackend(GpuBackend):
    """amdsmi, initialised on first use; GPU indices follow amdsmi's processor handle order."""

    name = "amd"

    def __init__(self) -> None:
        self._smi: Any = None
        self._handles: list[Any] = []

    def _library(self) -> Any:
        if self._smi is None:
            from collscope.hw.capture import captured

            smi = load_amdsmi()
            with captured("amdsmi"):
                smi.amdsmi_init()
            self._smi = smi
            self._handles = list(self._query("amdsmi_get_processor_handles") or [])
        return self._smi

    def _query(self, function: str, *args: Any) -> Any:
        """Every amdsmi call goes through here: AmdSmiException, a function this amdsmi version
        lacks, and "N/A" / "not supported" answers all become None."""
        smi = self._smi
        call = getattr(smi, function, None)
        if call is None:
            return None
        try:
            value = call(*args)
        except smi.AmdSmiException:
            return None
        if isinstance(value, str) and value.strip().lower() in ABSENT_STRINGS:
            return None
        return value

    def available(self) -> bool:
        try:
            self._library()
        except Exception:  # no library, no driver, no permission: simply not this backend
            return False
        return bool(self._handles)

    def inventory(self) -> list[GpuInfo]:
        self._library()
        gpus = []
        for index, handle in enumerate(self._handles):
            asic = self._query("amdsmi_get_gpu_asic_info", handle) or {}
            vram = self._query("amdsmi_get_gpu_vram_usage", handle) or {}
            driver = self._query("amdsmi_get_gpu_driver_info", handle) or {}
            total = number(vram.get("vram_total"))
            gpus.append(GpuInfo(
                index=index,
                name=_text(asic.get("market_name")),
                memory_bytes=None if total is None else int(total * MIB),
                pci_bus_id=_text(self._query("amdsmi_get_gpu_device_bdf", handle)),
                uuid=_text(self._query("amdsmi_get_gpu_device_uuid", handle)),
                serial=_text(asic.get("asic_serial")),
                driver_version=_text(driver.get("driver_version")),
            ))
        return gpus

    def metrics(self) -> list[GpuMetrics]:
        self._library()
        return [self._one(index, handle) for index, handle in enumerate(self._handles)]

    def _one(self, index: int, handle: Any) -> GpuMetrics:
        activity = self._query("amdsmi_get_gpu_activity", handle) or {}
        vram = self._query("amdsmi_get_gpu_vram_usage", handle) or {}
        gpu = self._query("amdsmi_get_gpu_metrics_info", handle) or {}
        used, total = number(vram.get("vram_used")), number(vram.get("vram_total"))
        pcie = number(gpu.get("pcie_bandwidth_inst"))
        # amdsmi_get_gpu_activity first; the metrics table's averages where it has no answer.
        util = first_number(activity, "gfx_activity")
        util = util if util is not None else first_number(gpu, "average_gfx_activity")
        mem_util = first_number(activity, "umc_activity")
        mem_util = mem_util if mem_util is not None else first_number(gpu, "average_umc_activity")
        return GpuMetrics(
            index=index,
            util_percent=_float(util),
            mem_util_percent=_float(mem_util),
            mem_used_bytes=None if used is None else int(used * MIB),
            mem_total_bytes=None if total is None else int(total * MIB),
            # MI300 reports current_socket_power and leaves average N/A; MI200 the reverse.
            power_w=_float(first_number(gpu, "current_socket_power", "average_socket_power")),
            temperature_c=_float(first_number(gpu, "temperature_hotspot", "temperature_edge")),
            pcie_bytes_per_s=None if pcie is None else float(pcie * GB),
            xgmi_read_bytes=link_total(gpu.get("xgmi_read_data_acc"), KIB),
            xgmi_write_bytes=link_total(gpu.get("xgmi_write_data_acc"), KIB),
        )

    def topology(self) -> Topology | None:
        """GPU x GPU links from the amd-smi / rocm-smi tools that ship with amdsmi."""
        return cli_topology()

    def close(self) -> None:
        smi, self._smi = self._smi, None
        self._handles = []
        if smi is not None:
            try:
                smi.amdsmi_shut_down()
            except smi.AmdSmiException:
                pass


def _float(value: float | int | None) -> float | None:
    return None if value is None else float(value)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = value.decode() if isinstance(value, bytes) else str(value)
    return None if text.strip().lower() in ABSENT_STRINGS else text


# --------------------------------------------------------------------------- command-line tools
# Fallback when the amdsmi library is not importable: the amd-smi / rocm-smi / rocminfo tools
# through collscope's parsers. Every tool runs from an argument list (no shell) under a
# timeout; a missing, failing or hung tool gives None, never an exception.

def _parsed_list(run: ToolRunner, argv: Sequence[str], parse: Callable[[str], Any]) -> list[Any]:
    text = run(argv)
    return list(parse(text).value) if text else []


class AmdCliBackend(GpuBackend):
    """AMD GPUs through amd-smi, else rocm-smi, else rocminfo (inventory only)."""

    name = "amd"

    def __init__(self, run: ToolRunner | None = None) -> None:
        self._run: ToolRunner = run or tool_output
        self._gpus: list[GpuInfo] | None = None

    def inventory(self) -> list[GpuInfo]:
        if self._gpus is None:
            from collscope.parsers import amd_smi, rocm_smi, rocminfo

            gpus = _parsed_list(self._run, ("amd-smi", "static"), amd_smi.parse_static)
            if not gpus:
                gpus = _parsed_list(self._run, ("rocm-smi", "--showproductname"),
                                    rocm_smi.parse_productname)
                memory = {g.index: g.memory_bytes for g in _parsed_list(
                    self._run, ("rocm-smi", "--showmeminfo", "vram"), rocm_smi.parse_showmeminfo)}
                for gpu in gpus:
                    gpu.memory_bytes = gpu.memory_bytes or memory.get(gpu.index)
            if not gpus:
                gpus = _parsed_list(self._run, ("rocminfo",), rocminfo.parse_gpus)
            self._gpus = gpus
        return self._gpus

    def metrics(self) -> list[GpuMetrics]:
        from collscope.parsers import amd_smi, rocm_smi

        rows = _parsed_list(self._run, ("amd-smi", "metric"), amd_smi.parse_metric)
        if rows:
            return [GpuMetrics(
                index=m.index, util_percent=m.gfx_activity_percent,
                mem_util_percent=m.umc_activity_percent, mem_used_bytes=m.vram_used_bytes,
                mem_total_bytes=m.vram_total_bytes, power_w=m.power_w,
                temperature_c=(m.temperature_hotspot_c if m.temperature_hotspot_c is not None
                               else m.temperature_edge_c),
                # amd-smi prints PCIe bandwidth in Mb/s, both directions together
                pcie_bytes_per_s=(None if m.pcie_bandwidth_mbps is None
                                  else m.pcie_bandwidth_mbps * 1e6 / 8))
                for m in rows]
        statuses = _parsed_list(self._run, ("rocm-smi",), rocm_smi.parse_concise)
        return [GpuMetrics(index=s.index, util_percent=s.gpu_percent, power_w=s.power_w,
                           temperature_c=s.temperature_c) for s in statuses]

    def topology(self) -> Topology | None:
        """GPU x GPU link types and weights: amd-smi topology, else rocm-smi --showtopo."""
        return cli_topology(self._run)


def cli_topology(run: ToolRunner | None = None) -> Topology | None:
    from collscope.parsers import amd_smi, rocm_smi

    run = run or tool_output
    for argv, parse in ((("amd-smi", "topology"), amd_smi.parse_topology),
                        (("rocm-smi", "--showtopo"), rocm_smi.parse_showtopo)):
        text = run(argv)
        if text:
            topology = parse(text).value
            if topology.gpus > 0:
                return topology
    return None
