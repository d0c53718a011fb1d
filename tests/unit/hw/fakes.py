"""Fake ``amdsmi`` and ``pynvml`` modules, shaped like the real libraries at the boundary.

Same function names and argument lists, same return shapes (amdsmi: dicts with the real keys,
"N/A" for what the hardware does not report, all-ones sentinels already mapped the way
amdsmi_interface.py maps them; pynvml: ctypes structures with the real field names), and the
same exception classes (AmdSmiLibraryException(err_code), NVMLError_NotSupported).
"""

from __future__ import annotations

import ctypes
import types
from typing import Any

# --------------------------------------------------------------------------------- amdsmi ---

AMDSMI_STATUS_NOT_SUPPORTED = 2
N_A = "N/A"


class AmdSmiException(Exception):
    """Base smi exception class"""


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int):
        err_code = abs(err_code)
        super().__init__(err_code)
        self.err_code = err_code
        self.err_info = ("AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported"
                         if err_code == AMDSMI_STATUS_NOT_SUPPORTED else "unknown")

    def __str__(self) -> str:
        return f"An error occured with code: {self.err_code}({self.err_info})"


class amdsmi_processor_handle(ctypes.c_void_p):  # noqa: N801 (the real type's name)
    pass


def mi300x_metrics(**overrides: Any) -> dict[str, Any]:
    """amdsmi_get_gpu_metrics_info as an MI300X answers it (gpu_metrics v1.5): socket power in
    current_socket_power (average is N/A), 7 active xGMI links of 8."""
    metrics: dict[str, Any] = {
        "temperature_edge": N_A, "temperature_hotspot": 48, "temperature_mem": 40,
        "temperature_vrgfx": N_A, "temperature_vrsoc": 43, "temperature_vrmem": N_A,
        "average_gfx_activity": 97, "average_umc_activity": 35, "average_mm_activity": N_A,
        "average_socket_power": N_A, "energy_accumulator": 123456789,
        "system_clock_counter": 987654321, "average_gfxclk_frequency": N_A,
        "average_socclk_frequency": N_A, "average_uclk_frequency": N_A,
        "average_vclk0_frequency": N_A, "average_dclk0_frequency": N_A,
        "average_vclk1_frequency": N_A, "average_dclk1_frequency": N_A,
        "current_gfxclk": 2100, "current_socclk": 1200, "current_uclk": 1300,
        "current_vclk0": 29, "current_dclk0": 22, "current_vclk1": N_A, "current_dclk1": N_A,
        "throttle_status": False, "current_fan_speed": N_A, "pcie_link_width": 16,
        "pcie_link_speed": 320, "gfx_activity_acc": 1000, "mem_activity_acc": 500,
        "temperature_hbm": [N_A, N_A, N_A, N_A], "firmware_timestamp": 100,
        "voltage_soc": N_A, "voltage_gfx": N_A, "voltage_mem": N_A,
        "indep_throttle_status": False, "current_socket_power": 552,
        "vcn_activity": [0, 0, 0, 0], "gfxclk_lock_status": 0, "xgmi_link_width": 16,
        "xgmi_link_speed": 32, "pcie_bandwidth_acc": 5000, "pcie_bandwidth_inst": 12,
        "pcie_l0_to_recov_count_acc": 1, "pcie_replay_count_acc": 0,
        "pcie_replay_rover_count_acc": 0,
        "xgmi_read_data_acc": [1000, 2000, 3000, 4000, 5000, 6000, 7000, N_A],
        "xgmi_write_data_acc": [100, 200, 300, 400, 500, 600, 700, N_A],
        "current_gfxclks": [2100, 2100, 2100, 2100, 2100, 2100, 2100, 2100],
        "current_socclks": [1200, 1200, 1200, 1200], "current_vclk0s": [29, 29, 29, 29],
        "current_dclk0s": [22, 22, 22, 22], "jpeg_activity": [0] * 32,
        "pcie_nak_sent_count_acc": 0, "pcie_nak_rcvd_count_acc": 0,
    }
    metrics.update(overrides)
    return metrics


def fake_amdsmi(gpus: int = 2, metrics_supported: tuple[bool, ...] = (True, False),
                fail_init: bool = False) -> types.ModuleType:
    """An amdsmi module with ``gpus`` MI300X-like devices; GPU i's amdsmi_get_gpu_metrics_info
    raises NOT_SUPPORTED where ``metrics_supported[i]`` is False (as on a VF or an old ASIC).

    ``module.state`` holds the counters the calls return, for tests to advance.
    """
    mod = types.ModuleType("amdsmi")
    mod.AmdSmiException = AmdSmiException
    mod.AmdSmiLibraryException = AmdSmiLibraryException
    mod.amdsmi_processor_handle = amdsmi_processor_handle
    handles = [amdsmi_processor_handle(0x1000 + i) for i in range(gpus)]
    state: dict[str, Any] = {"init": 0, "shutdown": 0, "xgmi_scale": 1}
    mod.state = state

    def index_of(processor_handle: Any) -> int:
        if not isinstance(processor_handle, amdsmi_processor_handle):
            raise AmdSmiException("Invalid parameter: expected amdsmi_processor_handle")
        return [h.value for h in handles].index(processor_handle.value)

    def amdsmi_init(flag: int = 2) -> None:
        if fail_init:
            raise AmdSmiLibraryException(8)  # AMDSMI_STATUS_INIT_ERROR
        state["init"] += 1

    def amdsmi_shut_down() -> None:
        state["shutdown"] += 1

    def amdsmi_get_processor_handles() -> list[amdsmi_processor_handle]:
        return list(handles)

    def amdsmi_get_gpu_asic_info(processor_handle: Any) -> dict[str, Any]:
        i = index_of(processor_handle)
        return {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002",
                "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
                "subvendor_id": "0x1002", "device_id": "0x74a1", "rev_id": "0x00",
                "asic_serial": f"0x{0xABCD0000 + i:016X}", "oam_id": i,
                "num_compute_units": 304, "target_graphics_version": "gfx942"}

    def amdsmi_get_gpu_activity(processor_handle: Any) -> dict[str, Any]:
        i = index_of(processor_handle)
        return {"gfx_activity": 90 + i, "umc_activity": 30 + i, "mm_activity": N_A}

    def amdsmi_get_gpu_vram_usage(processor_handle: Any) -> dict[str, Any]:
        index_of(processor_handle)
        return {"vram_total": 196592, "vram_used": 1024}  # MiB, as the real call

    def amdsmi_get_gpu_metrics_info(processor_handle: Any) -> dict[str, Any]:
        i = index_of(processor_handle)
        if not metrics_supported[i]:
            raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED)
        scale = state["xgmi_scale"]
        base = mi300x_metrics()
        return mi300x_metrics(
            xgmi_read_data_acc=[v if v == N_A else v * scale
                                for v in base["xgmi_read_data_acc"]],
            xgmi_write_data_acc=[v if v == N_A else v * scale
                                 for v in base["xgmi_write_data_acc"]])

    def amdsmi_get_gpu_device_bdf(processor_handle: Any) -> str:
        return f"0000:{0x0c + 0x10 * index_of(processor_handle):02x}:00.0"

    def amdsmi_get_gpu_device_uuid(processor_handle: Any) -> str:
        return f"3cff74a1-0000-1000-80e8-{index_of(processor_handle):012x}"

    def amdsmi_get_gpu_driver_info(processor_handle: Any) -> dict[str, str]:
        index_of(processor_handle)
        return {"driver_name": "amdgpu", "driver_version": "6.8.5", "driver_date": "N/A"}

    for function in (amdsmi_init, amdsmi_shut_down, amdsmi_get_processor_handles,
                     amdsmi_get_gpu_asic_info, amdsmi_get_gpu_activity,
                     amdsmi_get_gpu_vram_usage, amdsmi_get_gpu_metrics_info,
                     amdsmi_get_gpu_device_bdf, amdsmi_get_gpu_device_uuid,
                     amdsmi_get_gpu_driver_info):
        setattr(mod, function.__name__, function)
    return mod


# --------------------------------------------------------------------------------- pynvml ---

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_TEMPERATURE_GPU = 0
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139
NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3


class NVMLError(Exception):
    def __init__(self, value: int):
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return {NVML_ERROR_NOT_SUPPORTED: "Not Supported"}.get(self.value, "Unknown Error")


class NVMLError_NotSupported(NVMLError):  # noqa: N801 (pynvml's generated class name)
    def __init__(self) -> None:
        super().__init__(NVML_ERROR_NOT_SUPPORTED)


class c_nvmlUtilization_t(ctypes.Structure):  # noqa: N801
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class c_nvmlMemory_t(ctypes.Structure):  # noqa: N801
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class c_nvmlValue_t(ctypes.Union):  # noqa: N801
    _fields_ = [("dVal", ctypes.c_double), ("uiVal", ctypes.c_uint),
                ("ulVal", ctypes.c_ulong), ("ullVal", ctypes.c_ulonglong),
                ("sllVal", ctypes.c_longlong), ("siVal", ctypes.c_int),
                ("usVal", ctypes.c_ushort)]


class c_nvmlFieldValue_t(ctypes.Structure):  # noqa: N801
    _fields_ = [("fieldId", ctypes.c_uint32), ("scopeId", ctypes.c_uint32),
                ("timestamp", ctypes.c_int64), ("latencyUsec", ctypes.c_int64),
                ("valueType", ctypes.c_uint), ("nvmlReturn", ctypes.c_uint),
                ("value", c_nvmlValue_t)]


class c_nvmlPciInfo_t(ctypes.Structure):  # noqa: N801
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint),
                ("bus", ctypes.c_uint), ("device", ctypes.c_uint),
                ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("busId", ctypes.c_char * 32)]


class c_nvmlDevice_t(ctypes.c_void_p):  # noqa: N801
    pass


def fake_pynvml(gpus: int = 2, nvlink: tuple[bool, ...] = (True, False),
                pcie_supported: tuple[bool, ...] = (True, False)) -> types.ModuleType:
    """A pynvml module with ``gpus`` H200-like devices. GPU i has NVLink where ``nvlink[i]``
    and PCIe throughput counters where ``pcie_supported[i]`` (else NVMLError_NotSupported /
    a NOT_SUPPORTED field value, as NVML answers)."""
    mod = types.ModuleType("pynvml")
    for name, value in list(globals().items()):
        if name.startswith(("NVML_", "c_nvml")) or name in ("NVMLError",
                                                            "NVMLError_NotSupported"):
            setattr(mod, name, value)
    handles = [c_nvmlDevice_t(0x2000 + i) for i in range(gpus)]
    state: dict[str, Any] = {"init": 0, "shutdown": 0, "nvlink_kib": 1000}
    mod.state = state

    def index_of(handle: Any) -> int:
        return [h.value for h in handles].index(handle.value)

    def nvmlInit() -> None:  # noqa: N802 (pynvml's names)
        state["init"] += 1

    def nvmlShutdown() -> None:  # noqa: N802
        state["shutdown"] += 1

    def nvmlDeviceGetCount() -> int:  # noqa: N802
        return gpus

    def nvmlDeviceGetHandleByIndex(index: int) -> c_nvmlDevice_t:  # noqa: N802
        return handles[index]

    def nvmlSystemGetDriverVersion() -> str:  # noqa: N802
        return "560.35.03"

    def nvmlDeviceGetName(handle: Any) -> str:  # noqa: N802
        index_of(handle)
        return "NVIDIA H200"

    def nvmlDeviceGetUUID(handle: Any) -> str:  # noqa: N802
        return f"GPU-00000000-0000-0000-0000-{index_of(handle):012d}"

    def nvmlDeviceGetPciInfo(handle: Any) -> c_nvmlPciInfo_t:  # noqa: N802
        info = c_nvmlPciInfo_t()
        info.busId = f"00000000:{0x18 + index_of(handle):02X}:00.0".encode()
        return info

    def nvmlDeviceGetUtilizationRates(handle: Any) -> c_nvmlUtilization_t:  # noqa: N802
        i = index_of(handle)
        return c_nvmlUtilization_t(gpu=80 + i, memory=40 + i)

    def nvmlDeviceGetMemoryInfo(handle: Any) -> c_nvmlMemory_t:  # noqa: N802
        index_of(handle)
        total = 150_754_820_096
        used = 2 * 1024**3
        return c_nvmlMemory_t(total=total, free=total - used, used=used)

    def nvmlDeviceGetPowerUsage(handle: Any) -> int:  # noqa: N802
        return 650_000 + index_of(handle)  # mW

    def nvmlDeviceGetTemperature(handle: Any, sensor: int) -> int:  # noqa: N802
        assert sensor == NVML_TEMPERATURE_GPU
        return 55 + index_of(handle)

    def nvmlDeviceGetPcieThroughput(device: Any, counter: int) -> int:  # noqa: N802
        if not pcie_supported[index_of(device)]:
            raise NVMLError_NotSupported()
        return 2000 if counter == NVML_PCIE_UTIL_RX_BYTES else 1000  # KB/s

    def nvmlDeviceGetFieldValues(handle: Any, fieldIds: list[Any]) -> Any:  # noqa: N802,N803
        values = (c_nvmlFieldValue_t * len(fieldIds))()
        for i, field_id in enumerate(fieldIds):
            try:
                values[i].fieldId, values[i].scopeId = field_id
            except TypeError:
                values[i].fieldId = field_id
            supported = nvlink[index_of(handle)] and values[i].scopeId == 0xFFFFFFFF
            values[i].nvmlReturn = NVML_SUCCESS if supported else NVML_ERROR_NOT_SUPPORTED
            values[i].valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            if supported:
                tx = values[i].fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX
                values[i].value.ullVal = state["nvlink_kib"] * (2 if tx else 1)
        return values

    for function in (nvmlInit, nvmlShutdown, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex,
                     nvmlSystemGetDriverVersion, nvmlDeviceGetName, nvmlDeviceGetUUID,
                     nvmlDeviceGetPciInfo, nvmlDeviceGetUtilizationRates,
                     nvmlDeviceGetMemoryInfo, nvmlDeviceGetPowerUsage, nvmlDeviceGetTemperature,
                     nvmlDeviceGetPcieThroughput, nvmlDeviceGetFieldValues):
        setattr(mod, function.__name__, function)
    return mod
