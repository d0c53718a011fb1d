"""The one interface every vendor backend implements (collscope.hw says the rules), apart from
the package so that the backends and the package's chooser import it without a cycle."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any

from collscope.parsers.common import GpuInfo


@dataclass
class GpuMetrics:
    """What one GPU is doing now. Every field is None where the source does not report it.

    Gauges are instantaneous values; the ``*_bytes`` link fields are cumulative counters (bytes
    since the driver started counting) from which the sampler derives rates. ``pcie_bytes_per_s``
    is for sources that report only the sum of both directions (AMD's pcie_bandwidth_inst).
    """

    index: int
    util_percent: float | None = None          # compute/graphics engine busy
    mem_util_percent: float | None = None      # memory controller busy (AMD umc, NVML memory)
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    power_w: float | None = None
    temperature_c: float | None = None          # hotspot/junction where the source has it
    pcie_rx_bytes_per_s: float | None = None
    pcie_tx_bytes_per_s: float | None = None
    pcie_bytes_per_s: float | None = None       # both directions, when not split
    xgmi_read_bytes: int | None = None          # counters, summed over links
    xgmi_write_bytes: int | None = None
    nvlink_rx_bytes: int | None = None
    nvlink_tx_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class GpuBackend(ABC):
    """One vendor's view of this node's GPUs."""

    name: str = "abstract"

    def available(self) -> bool:
        """True when the library (or tool) is usable and sees at least one GPU. Never raises.

        By default: the inventory is not empty; library backends override it to check the
        library first."""
        try:
            return bool(self.inventory())
        except Exception:  # never raises, as the interface promises
            return False

    @abstractmethod
    def inventory(self) -> list[GpuInfo]:
        """Static facts per GPU: index, name, memory_bytes, and whatever else the source has."""

    @abstractmethod
    def metrics(self) -> list[GpuMetrics]:
        """One GpuMetrics per GPU, in inventory order."""

    def close(self) -> None:  # noqa: B027 (optional hook: most backends hold nothing)
        """Release the vendor library (shutdown calls). Safe to call twice."""

    def __enter__(self) -> GpuBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
