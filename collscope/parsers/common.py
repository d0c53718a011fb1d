"""Shared shape of every parser result."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

# Indices above this are damaged text, not hardware: the largest node today shows 64 GPUs
# (8 MI300X in CPX mode). Matrices are n x n, so a typo such as GPU[99999999] must not size them.
MAX_GPUS = 256
# A matrix label of amd-smi and rocm-smi: GPU0, gpu1, ...
GPU_LABEL = re.compile(r"^GPU(\d+)$", re.IGNORECASE)


@dataclass
class Parsed(Generic[T]):
    """What a parser understood (``value``) and what it could not (``warnings``)."""

    value: T
    warnings: list[str] = field(default_factory=list)


# A key of a tool's output -> the record field it fills and how its value text is read.
FieldReader = tuple[str, Callable[[str], object]]


def set_field(record: object, fields: dict[str, FieldReader], key: str, value: str) -> bool:
    """Fills the field of ``record`` that ``key`` names in ``fields``; False when it names
    none (the caller decides where an unknown key goes)."""
    known = fields.get(key)
    if known is None:
        return False
    name, read = known
    setattr(record, name, read(value))
    return True


def to_int(text: str) -> int | None:
    """int of text, or None for anything that is not an integer (N/A, empty, garbage)."""
    try:
        return int(text.strip(), 0) if text.strip().lower().startswith("0x") else int(text.strip())
    except (ValueError, AttributeError):
        return None


def to_float(text: str) -> float | None:
    """float of text, or None for N/A, empty or garbage."""
    try:
        return float(text.strip())
    except (ValueError, AttributeError):
        return None


# Link types used in topology matrices, from closest to farthest.
LINK_TYPES = ("self", "xgmi", "nvlink", "pcie", "pix", "pxb", "phb", "node", "sys", "unknown")


@dataclass
class GpuInfo:
    """One GPU as a vendor tool reports it; fields the tool does not show stay None."""

    index: int
    name: str | None = None
    memory_bytes: int | None = None
    memory_used_bytes: int | None = None
    pci_bus_id: str | None = None
    serial: str | None = None
    uuid: str | None = None
    driver_version: str | None = None
    vbios: str | None = None
    numa_node: int | None = None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class Topology:
    """GPU x GPU matrices, indexed by GPU index; ``link_type`` entries come from LINK_TYPES.

    ``weight`` and ``hops`` are None where the tool does not report them; ``numa_node`` is per
    GPU. rocm-smi reports hops 1 for every xGMI pair even when not directly linked, so rules
    should look at link type and weight, not hops.
    """

    gpus: int = 0
    link_type: list[list[str]] = field(default_factory=list)
    weight: list[list[int | None]] = field(default_factory=list)
    hops: list[list[int | None]] = field(default_factory=list)
    numa_node: list[int | None] = field(default_factory=list)
    extra: dict[str, list[list[str]]] = field(default_factory=dict)


def json_start(text: str) -> int | None:
    """Where a tool's --json document starts: the first line opening with { or [, within the
    first six lines (rocm-smi and amd-smi print warning lines first); None for text output."""
    match = re.search(r"^[ \t]*[\[{]", text, re.M)
    if match is None or text[: match.start()].count("\n") > 5:
        return None
    return match.start()


def is_json(text: str) -> bool:
    """A tool's --json output, perhaps after a warning line or two."""
    return json_start(text) is not None
