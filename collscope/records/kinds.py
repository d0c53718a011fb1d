"""Every record kind, taken from the classes: each family module of records/ declares its
kinds as subclasses of records.base.Record, and this module imports the families and lists
what they declare. A new kind is a class in its family's module (a new family: a line in
FAMILIES); nothing here names a kind."""

from __future__ import annotations

import importlib
from typing import Any

from collscope.records.base import Record

# The modules of records/ that declare kinds.
FAMILIES = ("run", "bench", "train", "sample", "model", "trace", "finding", "links", "tune",
            "hang", "watch", "compare", "logs", "doctor", "report")


def _declared(cls: type[Record]) -> list[type[Record]]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_declared(sub))
    return found


def record_classes() -> dict[str, list[type[Record]]]:
    """kind -> the classes that declare it (more than one only where ``claims`` tells them
    apart: the class that overrides ``claims`` comes first)."""
    for family in FAMILIES:
        importlib.import_module(f"collscope.records.{family}")
    kinds: dict[str, list[type[Record]]] = {}
    for cls in _declared(Record):
        kinds.setdefault(str(cls.__struct_config__.tag), []).append(cls)
    for classes in kinds.values():
        classes.sort(key=lambda c: "claims" not in vars(c))
    return kinds


def class_of(raw: dict[str, Any], kinds: dict[str, list[type[Record]]]) -> type[Record] | None:
    """The class a written object of a known kind is read as; None for a kind none declares."""
    return next((cls for cls in kinds.get(str(raw.get("kind")), []) if cls.claims(raw)), None)
