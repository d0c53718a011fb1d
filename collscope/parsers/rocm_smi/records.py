"""Constants, line patterns and the GpuStatus record (the concise table's readings)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

GPU_LINE = re.compile(r"^\s*GPU\[(\d+)\]\s*:\s*(.*)$")
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
KEY_SEPARATOR = re.compile(r":(?:\s|$)")
CARD_KEY = re.compile(r"^card(\d+)$", re.IGNORECASE)
JSON_PAIR_KEY = re.compile(
    r"^\(topology\)\s*(weight|hops|link type)\s+between\s+drm\s+devices\s+(\d+)\s+and\s+(\d+)$"
)
SENSOR = re.compile(r"\((junction|edge|dieedge|memory|mem|hotspot)\)", re.IGNORECASE)
PERF_LEVELS = {
    "auto",
    "low",
    "high",
    "manual",
    "determinism",
    "stable_std",
    "stable_peak",
    "stable_min_mclk",
    "stable_min_sclk",
    "profile_standard",
    "profile_peak",
    "unknown",
}


@dataclass
class GpuStatus:
    """One GPU's live readings (concise table, --showuse, or the same keys in --json).

    Units are in the field names; fields the output does not show stay None.
    ``temperature_sensor`` says which sensor ``temperature_c`` came from (rocm-smi switched
    the concise table from the edge to the junction sensor in ROCm 6).
    """

    index: int
    node_id: int | None = None
    device_id: str | None = None
    guid: str | None = None
    name: str | None = None
    temperature_c: float | None = None
    temperature_sensor: str | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    partitions: str | None = None
    sclk_mhz: float | None = None
    mclk_mhz: float | None = None
    fan_percent: float | None = None
    perf_level: str | None = None
    vram_percent: float | None = None
    gpu_percent: float | None = None
    extra: dict[str, str] = field(default_factory=dict)
