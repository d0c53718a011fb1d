"""Shared shape of every parser result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class Parsed(Generic[T]):
    """What a parser understood (``value``) and what it could not (``warnings``)."""

    value: T
    warnings: list[str] = field(default_factory=list)


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
