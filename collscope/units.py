"""Sizes as people type them (8, 64K, 1M, 4G) and as tables print them."""

from __future__ import annotations

import math
import re

from collscope.errors import UsageError

_SUFFIX = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str, flag: str) -> int:
    """Bytes from '8', '64K', '1M', '4G' (powers of 1024, as nccl-tests); UsageError otherwise."""
    match = _SIZE.match(str(text))
    if not match:
        raise UsageError(f"{flag}: '{text}' is not a size; use a number of bytes with an "
                         "optional K, M, G or T suffix (powers of 1024), e.g. 8, 64K, 1M, 4G")
    value = float(match.group(1)) * _SUFFIX[match.group(2).upper()]
    if value != int(value):
        raise UsageError(f"{flag}: '{text}' is not a whole number of bytes")
    return int(value)


# Byte units as GPU tools print them, binary whatever the spelling (amd-smi prints MiB as "MB").
TOOL_BYTE_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "kib": 1 << 10, "mb": 1 << 20, "mib": 1 << 20,
                   "gb": 1 << 30, "gib": 1 << 30, "tb": 1 << 40, "tib": 1 << 40, "pb": 1 << 50}


def tool_bytes(number: float | str, unit: str) -> int | None:
    """Bytes of a GPU tool's "283 MB" / "48.8 GB" (binary units); None when not a size."""
    factor = TOOL_BYTE_UNITS.get(unit.strip().lower())
    try:
        total = float(number) * factor if factor is not None else None
    except ValueError:
        return None
    return int(total) if total is not None and math.isfinite(total) and abs(total) < 2**63 \
        else None


_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_DECIMAL_UNITS = ("B", "kB", "MB", "GB", "TB", "PB")


def format_bytes(value: float, *, decimal: bool = False, places: int = 1, trim_whole: bool = True,
                 whole_from: float = math.inf, largest: str | None = None) -> str:
    """``value`` bytes in the largest unit it reaches: binary (KiB = 2^10 B, for memory and
    message sizes) or ``decimal`` (kB = 10^3 B, for traffic rates), with ``places`` decimals,
    none when the value is whole in that unit (``trim_whole``) or at least ``whole_from``
    units. ``largest`` caps the unit ("GiB": 2 TiB prints as 2048 GiB)."""
    base = 1000.0 if decimal else 1024.0
    names: tuple[str, ...] = _DECIMAL_UNITS if decimal else _BINARY_UNITS
    if largest is not None:
        names = names[: names.index(largest) + 1]
    scaled = float(value)
    name = names[0]
    for name in names:
        if abs(scaled) < base or name == names[-1]:
            break
        scaled /= base
    if name == "B":
        return f"{scaled:.0f} B"
    if (trim_whole and scaled == int(scaled)) or abs(scaled) >= whole_from:
        return f"{scaled:.0f} {name}"
    return f"{scaled:.{places}f} {name}"


def format_size(num_bytes: int) -> str:
    """Short binary size, exact when possible: 8 B, 64 KiB, 1.5 MiB (largest unit GiB)."""
    return format_bytes(num_bytes, largest="GiB")


def format_size_exact(num_bytes: int) -> str:
    """64 KiB where that is exact, else the bytes (two sizes never print alike)."""
    text = format_size(num_bytes)
    return text if "." not in text else f"{num_bytes} B"
