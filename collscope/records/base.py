"""What every record kind is: a ``msgspec.Struct`` tagged by its ``kind``, written as one JSON
object and read back into the same class (records.kinds lists the kinds from the classes).

A kind is declared once, as ``class LinkRecord(Record, tag="link")``; the class says too where
its records join a run when read back (``joins``), which kind sums it up (``summed_in``), and
what a reader fills in for a field older writers left out (``read_defaults``), so the reader
(records.load) needs no line per kind."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

import msgspec


def _plain(value: Any) -> Any:
    """Values of other libraries' types as Python's, as json writes them: numpy's float64 and
    int64, torch's TorchVersion (a str)."""
    for kind in (str, float, int):
        if isinstance(value, kind):
            return kind(value)
    item = getattr(value, "item", None)           # a numpy scalar that is not a float subclass
    if callable(item):
        return item()
    raise TypeError(f"a record cannot hold {type(value).__name__} ({value!r})")


class Record(msgspec.Struct, tag_field="kind"):
    """One JSON Lines record; a subclass per kind, ``tag`` the kind's name."""

    # Where ``kind`` stands in the written object: before this field, or last (None). Each
    # kind keeps the order 0.x wrote it in (the golden outputs and users' scripts see it).
    kind_before: ClassVar[str | None] = None
    # The field of records.load.Run a reader puts this kind in (None: report does not read it);
    # a kind that ``opens_run`` starts the next run instead (its context).
    joins: ClassVar[str | None] = None
    opens_run: ClassVar[bool] = False
    # The kind that sums records of this one up (report reads that one and skips these).
    summed_in: ClassVar[str | None] = None
    # What a reader fills in where a record lacks a field or holds null (older writers).
    read_defaults: ClassVar[dict[str, Any]] = {}

    @property
    def kind(self) -> str:
        return str(self.__struct_config__.tag)

    @classmethod
    def claims(cls, raw: dict[str, Any]) -> bool:
        """Whether a decoded object of this kind is one of this class: two classes share a
        kind only where a field tells them apart (a finding of watch's, by its id)."""
        return True

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """The written object as this class's fields (the inverse of ``to_dict``'s shape)."""
        return raw

    def to_dict(self) -> dict[str, Any]:
        """The record as written: plain values, ``kind`` at its place."""
        data: dict[str, Any] = msgspec.to_builtins(self, enc_hook=_plain)
        kind = data.pop("kind")
        if self.kind_before is None:
            data["kind"] = kind
            return data
        ordered: dict[str, Any] = {}
        for name, value in data.items():
            if name == self.kind_before:
                ordered["kind"] = kind
            ordered[name] = value
        return ordered


R = TypeVar("R", bound="Record")


def read_record(cls: type[R], raw: dict[str, Any]) -> R:
    """A written object as ``cls``; msgspec.ValidationError names the field that does not fit."""
    data = cls.from_raw(raw)
    if cls.read_defaults:
        data = {**cls.read_defaults,
                **{k: v for k, v in data.items() if v is not None or k not in cls.read_defaults}}
    return msgspec.convert(data, cls)

