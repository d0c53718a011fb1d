"""Helpers the rocm-smi parsers share: key normalisation, numbers, GPU[i] lines, banners."""

from __future__ import annotations

import math
import re

from collscope.parsers.common import MAX_GPUS, GpuInfo, Parsed, to_int
from collscope.parsers.rocm_smi.records import GPU_LINE, KEY_SEPARATOR, NUMBER


def norm_key(key: str) -> str:
    """Lower-case, single-spaced key: rocm-smi spells 'Card series' and 'Card Series'."""
    return " ".join(key.strip().lower().split())


def snake_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def number_of(text: str | None) -> float | None:
    """First number in a cell such as '43.0°C', '155.0W', '94Mhz', '(300Mhz)', '0%'."""
    if text is None:
        return None
    match = NUMBER.search(text)
    if not match:
        return None
    try:
        value = float(match.group())
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def present_of(value: str | None) -> str | None:
    """None for the ways rocm-smi says 'nothing here'."""
    if value is None:
        return None
    value = value.strip()
    if not value or value.upper() in ("N/A", "NA", "NONE", "UNKNOWN"):
        return None
    return value


def _split_key_value(rest: str) -> tuple[str, str] | None:
    """Split 'key: value' at the first colon followed by a blank or the line end.

    Values such as PCI addresses (0000:83:00.0) contain colons too, but never one followed
    by a blank, so the first ': ' is the separator.
    """
    match = KEY_SEPARATOR.search(rest)
    if not match:
        return None
    key = rest[: match.start()].strip()
    if not key:
        return None
    return key, rest[match.end() :].strip()


def gpu_fields(lines: list[tuple[int, str]], warnings: list[str]) -> dict[int, dict[str, str]]:
    """Collect ``GPU[i] : key: value`` lines into {index: {normalised key: value}}."""
    fields: dict[int, dict[str, str]] = {}
    for lineno, line in lines:
        match = GPU_LINE.match(line)
        if not match:
            continue
        index = to_int(match.group(1))
        if index is None or index >= MAX_GPUS:
            warnings.append(f"line {lineno}: GPU index {match.group(1)[:20]} out of range")
            continue
        pair = _split_key_value(match.group(2))
        if pair is None:
            warnings.append(f"line {lineno}: no 'key: value' after GPU[{index}]")
            continue
        fields.setdefault(index, {})[norm_key(pair[0])] = pair[1]
    return fields


def banner_title(line: str) -> str | None:
    """Title of a '==== title ====' banner, None for other lines.

    String operations rather than a regex: '=+\\s*(.*?)\\s*=+' backtracks cubically on a
    long run of '='.
    """
    stripped = line.strip()
    if len(stripped) < 2 or stripped[0] != "=" or stripped[-1] != "=":
        return None
    return stripped.strip("=").strip()


def numbered(text: str) -> list[tuple[int, str]]:
    return list(enumerate(text.splitlines(), 1))


# rocm-smi key (normalised) -> GpuInfo attribute. Anything else lands in ``extra``.
_INFO_KEYS = {
    "card series": "name",
    "vram total memory (b)": "memory_bytes",
    "vram total used memory (b)": "memory_used_bytes",
    "pci bus": "pci_bus_id",
    "serial number": "serial",
    "unique id": "uuid",
    "driver version": "driver_version",
    "vbios version": "vbios",
    "(topology) numa node": "numa_node",
}
_INT_ATTRS = {"memory_bytes", "memory_used_bytes", "numa_node"}


def to_gpu_info(index: int, fields: dict[str, str], warnings: list[str]) -> GpuInfo:
    """Map one GPU's rocm-smi keys onto GpuInfo; unknown keys go to ``extra`` by snake name."""
    info = GpuInfo(index=index)
    for key, value in fields.items():
        attr = _INFO_KEYS.get(key)
        if attr is None:
            info.extra[snake_key(key) or key] = value
            continue
        if attr in _INT_ATTRS:
            number = to_int(value)
            if number is None and present_of(value) is not None:
                warnings.append(f"GPU[{index}]: {key!r} is not an integer: {value[:40]!r}")
            setattr(info, attr, number)
        else:
            setattr(info, attr, present_of(value))
    if info.name is None:
        # Some releases print 'Device Name' instead of 'Card series'.
        info.name = present_of(fields.get("device name"))
    return info


def gpu_infos(text: str, what: str) -> Parsed[list[GpuInfo]]:
    warnings: list[str] = []
    fields = gpu_fields(numbered(text), warnings)
    if not fields:
        warnings.append(f"no 'GPU[i] : key: value' lines found for {what}")
    gpus = [to_gpu_info(index, fields[index], warnings) for index in sorted(fields)]
    return Parsed(gpus, warnings)
