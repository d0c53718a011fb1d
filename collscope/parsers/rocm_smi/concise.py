"""The concise ``rocm-smi`` table, mapped by its header (ROCm 5.x-7.x layouts)."""

from __future__ import annotations

import re

from collscope.parsers.common import MAX_GPUS, FieldReader, Parsed, set_field, to_int
from collscope.parsers.rocm_smi.common import number_of, numbered, present_of, snake_key
from collscope.parsers.rocm_smi.records import PERF_LEVELS, SENSOR, GpuStatus


def _cells(line: str) -> list[str]:
    """Split a table row on runs of 2+ blanks, re-joining 'a, b' groups split by the gap.

    '0x74a2,   1017' (DID, GUID) and 'NPS1, SPX, 0' (partitions) are one column each.
    """
    parts = [p for p in re.split(r"\s{2,}|\t+", line.strip()) if p]
    merged: list[str] = []
    for part in parts:
        if merged and merged[-1].endswith(","):
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    return merged


# Headers (lower case) named in full -> the field each fills and how its cell is read; the
# headers known by a prefix, and the cells that hold two values, are placed by ``_assign``.
_COLUMNS: dict[str, FieldReader] = {
    "node": ("node_id", to_int), "sclk": ("sclk_mhz", number_of),
    "mclk": ("mclk_mhz", number_of), "fan": ("fan_percent", number_of),
    "perf": ("perf_level", present_of), "pwrcap": ("power_cap_w", number_of),
    "vram%": ("vram_percent", number_of), "gpu%": ("gpu_percent", number_of),
}


def _assign(status: GpuStatus, column: str, value: str) -> None:
    """Put one concise-table cell into the field its header names."""
    col = column.lower()
    if col in ("device", "gpu"):
        return
    if set_field(status, _COLUMNS, col, value):
        return
    if col.startswith("ids"):
        parts = [p.strip() for p in value.split(",")]
        status.device_id = present_of(parts[0])
        status.guid = present_of(parts[1]) if len(parts) > 1 else None
    elif col.startswith("[model"):
        inner = [p.strip(" []") for p in value.split(":")]
        status.device_id = present_of(inner[0])
        if len(inner) > 1:
            status.extra["revision"] = inner[1]
    elif col.startswith("temp"):
        status.temperature_c = number_of(value)
    elif col.startswith("power") or col in ("avgpwr", "pwr"):
        status.power_w = number_of(value)
    elif col.startswith("partition"):
        status.partitions = present_of(value)
    else:
        status.extra[snake_key(column) or column] = value


def _assign_by_unit(status: GpuStatus, tokens: list[str]) -> None:
    """Fallback when a row does not line up with its header: place values by their units."""
    temps = [t for t in tokens if re.fullmatch(r"[-+]?\d+(\.\d+)?(°C|°|c|C)", t)]
    watts = [t for t in tokens if re.fullmatch(r"\d+(\.\d+)?W", t)]
    clocks = [t for t in tokens if re.fullmatch(r"\d+(\.\d+)?[Mm]hz", t)]
    percents = [t for t in tokens if re.fullmatch(r"\d+(\.\d+)?%", t)]
    if temps:
        status.temperature_c = number_of(temps[0])
    if watts:
        status.power_w = number_of(watts[0])
        if len(watts) > 1:
            status.power_cap_w = number_of(watts[-1])
    if clocks:
        status.sclk_mhz = number_of(clocks[0])
        if len(clocks) > 1:
            status.mclk_mhz = number_of(clocks[1])
    if len(percents) >= 2:
        status.vram_percent = number_of(percents[-2])
        status.gpu_percent = number_of(percents[-1])
        if len(percents) >= 3:
            status.fan_percent = number_of(percents[0])
    for token in tokens:
        if token.lower() in PERF_LEVELS:
            status.perf_level = token
            break


def parse_concise(text: str) -> Parsed[list[GpuStatus]]:
    """Plain ``rocm-smi``: the 'Concise Info' table (temp, power, clocks, VRAM%, GPU%...).

    Columns are mapped by header name, which covers the ROCm 5 layout (GPU, Temp (DieEdge),
    AvgPwr...), ROCm 6.0/6.1 ([Model : Revision] with the name on a second line) and
    ROCm 6.2+ (Device, Node, IDs (DID, GUID), Partitions...).
    """
    warnings: list[str] = []
    lines = numbered(text)
    header: list[str] | None = None
    sensor: str | None = None
    in_body = False
    statuses: list[GpuStatus] = []
    for lineno, line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        low = stripped.lower()
        if header is None:
            if "temp" in low and ("gpu%" in low or "vram%" in low):
                header = _cells(line)
                found = SENSOR.search(line)
                sensor = found.group(1).lower() if found else None
            continue
        if stripped.startswith("="):
            if "end of" in low:
                break
            in_body = True
            continue
        if not in_body:
            found = SENSOR.search(line)  # second header line: '(DID, GUID)  (Junction) ...'
            if found and sensor is None:
                sensor = found.group(1).lower()
            if not re.match(r"^\d+\s", stripped):
                continue
            in_body = True  # a table printed without the separator line
        if not re.match(r"^\d+(\s|$)", stripped):
            indented = line[:1].isspace()
            if indented and statuses and statuses[-1].name is None and stripped[0] != "(":
                statuses[-1].name = stripped  # ROCm 6.0/6.1 print the name under the row
            else:
                warnings.append(f"line {lineno}: not a concise-table row: {stripped[:60]!r}")
            continue
        row = _cells(line)
        index = to_int(row[0].split()[0])
        if index is None or index >= MAX_GPUS:
            warnings.append(f"line {lineno}: bad device index {row[0][:20]!r}")
            continue
        status = GpuStatus(index=index, temperature_sensor=sensor)
        if len(row) == len(header):
            for column, value in zip(header, row, strict=True):
                _assign(status, column, value)
        else:
            warnings.append(
                f"line {lineno}: {len(row)} cells for {len(header)} columns; "
                "values placed by their units"
            )
            _assign_by_unit(status, line.split()[1:])
        statuses.append(status)
    if header is None:
        warnings.append("no concise table header (Temp ... VRAM% GPU%) found")
    elif not statuses:
        warnings.append("concise table has no GPU rows")
    return Parsed(statuses, warnings)
