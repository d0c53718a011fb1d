"""Vendor GPU backends behind one small interface.

This package is the only place that imports ``amdsmi`` or ``pynvml`` (and, for ``doctor``,
runs ``amd-smi`` / ``rocm-smi`` / ``nvidia-smi``). Everything above it sees ``GpuBackend``:
``inventory()`` for what the GPUs are, ``metrics()`` for what they are doing now.

Rules every backend follows (as nvitop's NVML wrapper does):

- the vendor library is imported and initialised lazily, inside the backend module only, and a
  missing library raises ImportError with the ``pip install collscope[...]`` hint;
- every vendor call goes through one helper that maps "not supported", "N/A" and the library's
  own errors to ``None``: a metric the source lacks is None, never 0, so that an idle GPU and a
  GPU that does not report a value stay distinguishable;
- ``available()`` never raises: it answers whether this backend can see at least one GPU.

Backends that parse command-line tools instead of calling libraries (the fallbacks ``doctor``
adds) implement the same four members and join ``detect_backend`` through ``candidates``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from collscope.parsers.common import GpuInfo

__all__ = ["GpuBackend", "GpuInfo", "GpuMetrics", "BACKEND_NAMES", "detect_backend",
           "make_backend"]

BACKEND_NAMES = ("amd", "nvidia", "none")


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


def make_backend(name: str) -> GpuBackend:
    """The backend called ``name`` (amd, nvidia, none), not yet initialised."""
    if name == "amd":
        from collscope.hw.amd import AmdBackend

        return AmdBackend()
    if name == "nvidia":
        from collscope.hw.nvidia import NvidiaBackend

        return NvidiaBackend()
    if name == "none":
        from collscope.hw.none import NoneBackend

        return NoneBackend()
    raise ValueError(f"unknown GPU backend {name!r}; use one of {', '.join(BACKEND_NAMES)}")


def _default_candidates() -> list[Callable[[], GpuBackend]]:
    """Each vendor's library first, then its command-line tools (slower to sample, but they
    are there on machines where the Python library is not installed)."""
    from collscope.hw.amd import AmdCliBackend
    from collscope.hw.nvidia import NvidiaSmiBackend

    return [lambda: make_backend("amd"), AmdCliBackend, lambda: make_backend("nvidia"),
            NvidiaSmiBackend]


def detect_backend(candidates: Sequence[Callable[[], GpuBackend]] | None = None) -> GpuBackend:
    """The first candidate that sees a GPU, else the ``none`` backend.

    AMD comes first (collscope's first-class target), then NVIDIA; each through its library,
    else its command-line tools. A machine with both vendors'
    libraries installed but one vendor's GPUs gets the vendor whose library sees devices.
    Candidates that are not chosen are closed, so no library stays initialised for nothing.
    """
    from collscope.hw.none import NoneBackend

    factories = list(candidates) if candidates is not None else _default_candidates()
    for factory in factories:
        backend = factory()
        if backend.available():
            return backend
        backend.close()
    return NoneBackend()
