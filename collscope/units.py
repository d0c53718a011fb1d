"""Sizes as people type them (8, 64K, 1M, 4G) and as tables print them."""

from __future__ import annotations

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


def format_size(num_bytes: int) -> str:
    """Short binary size, exact when possible: 8 B, 64 KiB, 1.5 MiB."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if num_bytes >= factor:
            value = num_bytes / factor
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{num_bytes} B"
