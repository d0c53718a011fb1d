"""The backend of a machine without GPUs (or without a usable vendor library)."""

from __future__ import annotations

from collscope.hw.backend import GpuBackend, GpuMetrics
from collscope.parsers.common import GpuInfo


class NoneBackend(GpuBackend):
    """No GPUs: an empty inventory and no metrics, so callers need no special case."""

    name = "none"

    def available(self) -> bool:
        return True

    def inventory(self) -> list[GpuInfo]:
        return []

    def metrics(self) -> list[GpuMetrics]:
        return []
