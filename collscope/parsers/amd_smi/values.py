"""Constants and value helpers: amd-smi quantities ({"value", "unit"}, "192 GB", "N/A"),
rates, and the nested-dict lookups every command uses."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from collscope.units import TOOL_BYTE_UNITS

# Nesting deeper than any amd-smi output; guards the recursive walks against hostile JSON.
MAX_DEPTH = 24

# Both patterns are written so that no part can match the same text two ways: long runs of
# blanks or digits in damaged input must not make them backtrack (quadratic or worse).
KV = re.compile(
    r"^(?P<indent> *)(?P<key>[A-Za-z0-9_][A-Za-z0-9_ ./()%#+-]*?):(?:\s(?P<value>.*))?$"
)
_QUANTITY = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(.*)$")
BDF = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
TABLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 _/-]*")
CELL = re.compile(
    r"N/A|(?<![\d.])[-+]?\d+(?:\.\d+)?\s*[KMGTP]?i?B\b|[-+]?\d+(?:\.\d+)?", re.IGNORECASE
)
RATE = re.compile(r"(?<![\d.])([-+]?\d+(?:\.\d+)?)\s*([KMGT]?)(b|B)/s")

# A lookup table, one pair a line, like parsers/nvidia_smi.py's _LINK_CODES: data, not logic.
STATUS_WORDS = {
    "u": "up",
    "up": "up",
    "d": "down",
    "down": "down",
    "x": "disabled",
    "disabled": "disabled",
    "self": "self",
    "n/a": "n/a",
}




def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _quantity(value: Any) -> tuple[float | None, str]:
    """(number, unit) from '16 GT/s', {"value": 16, "unit": "GT/s"}, 16 or 'N/A'."""
    if isinstance(value, dict):
        if "value" not in value:
            return None, ""
        number, unit = _quantity(value["value"])
        given = value.get("unit")
        return number, given if isinstance(given, str) else unit
    if isinstance(value, bool):
        return None, ""
    if isinstance(value, (int, float)):
        try:
            return _finite(float(value)), ""
        except OverflowError:
            return None, ""
    if isinstance(value, str):
        match = _QUANTITY.match(value)
        if not match:
            return None, ""
        try:
            return _finite(float(match.group(1))), match.group(2).strip()
        except (ValueError, OverflowError):
            return None, ""
    return None, ""


def float_of(value: Any) -> float | None:
    return _quantity(value)[0]


def int_of(value: Any) -> int | None:
    number = float_of(value)
    if number is None or abs(number) > 2**63:
        return None
    return int(number)


def bytes_of(value: Any, default_unit: str = "B") -> int | None:
    """Bytes from a size; amd-smi's 'MB'/'KB' are binary (196592 MB is 192 GiB)."""
    number, unit = _quantity(value)
    if number is None:
        return None
    factor = TOOL_BYTE_UNITS.get((unit or default_unit).strip().lower())
    if factor is None:
        return None
    total = number * factor
    return int(total) if math.isfinite(total) and abs(total) < 2**63 else None


def rate_gbps(value: Any) -> float | None:
    """Gb/s from '32 Gb/s', {"value": 32, "unit": "Gb/s"}; Mb/s and GB/s are converted."""
    number, unit = _quantity(value)
    if number is None:
        return None
    match = re.fullmatch(r"([KMGT]?)(b|B)/s", unit.strip())
    if not match:
        return number  # no unit: amd-smi's default for these is Gb/s
    scale = {"": 1e-9, "K": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}[match.group(1)]
    if match.group(2) == "B":
        scale *= 8
    return _finite(number * scale)


def rate_of(number: str, prefix: str, bit: str) -> float | None:
    """Gb/s from the pieces of '32 Gb/s' as RATE splits them."""
    return rate_gbps({"value": number, "unit": f"{prefix}{bit}/s"})


def text_of(value: Any) -> str | None:
    """A printable scalar, or None for N/A, empty, objects and lists."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    if not text or text.upper() in ("N/A", "NA", "NONE"):
        return None
    return text


def list_of(value: Any) -> list[float | None]:
    """Per-engine values from '[0 %, 0 %]' or a JSON list; [] when not reported."""
    if isinstance(value, list):
        return [float_of(item) for item in value]
    if isinstance(value, str) and value.strip().startswith("["):
        inner = value.strip().strip("[]")
        return [float_of(part) for part in inner.split(",") if part.strip()]
    return []


def get_in(node: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _missing(value: Any) -> bool:
    if isinstance(value, dict) and "value" in value:
        value = value["value"]
    return value is None or (isinstance(value, str) and value.strip().upper() in ("", "N/A"))


def first_of(node: Any, *paths: tuple[str, ...]) -> Any:
    """Value of the first path present and not N/A (amd-smi renamed keys across releases)."""
    for path in paths:
        value = get_in(node, *path)
        if not _missing(value):
            return value
    return None


def flatten(node: Any, prefix: str = "", depth: int = 0) -> dict[str, str]:
    """Dotted-path -> printable value for every leaf; {"value", "unit"} becomes 'v unit'."""
    out: dict[str, str] = {}
    if depth > MAX_DEPTH:
        return out
    if isinstance(node, dict):
        if "value" in node and set(node) <= {"value", "unit"}:
            unit = node.get("unit")
            out[prefix] = f"{node['value']} {unit}".strip() if unit else str(node["value"])
            return out
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key), depth + 1))
    elif isinstance(node, list):
        parts = []
        for item in node:
            flat = flatten(item, "", depth + 1)
            parts.append(flat.get("", json.dumps(flat)) if flat else "")
        out[prefix] = "[" + ", ".join(parts) + "]"
    else:
        out[prefix] = "" if node is None else str(node)
    return out
