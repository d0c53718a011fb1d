"""A Flight Recorder JSON dump decoded straight into what the reduction reads (pure).

msgspec decodes each entry into a typed struct: the fields the reduction compares (numbers,
group, name, state) typed as torch writes them, the fields only a kept entry shows (sizes,
dtypes, frames, times) kept as raw JSON bytes and decoded when read, every other field skipped
while parsing. That is 2x faster than decoding every entry into a dict
(benchmarks/hang_scale.py) and builds no per-entry dict.

A struct answers ``get``, ``[]`` and ``in`` as the entry's dict would for every field the
analysis reads (dumps.py), so one code reads both. Any document this shape does not fit
(a field missing or of another type, invalid UTF-8, a document that is not a dump) gives None
and is read by the generic decoder instead: the outcome is the same, only slower."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

_ABSENT = Raw()           # an empty Raw: the field is not in the document


class JsonEntry(Struct, gc=False):
    """One entry; the names are torch's."""

    record_id: int
    pg_id: int
    process_group: tuple[str, str]
    collective_seq_id: int
    p2p_seq_id: int
    op_id: int
    profiling_name: str
    state: str
    retired: bool
    input_sizes: Raw = _ABSENT
    input_dtypes: Raw = _ABSENT
    output_sizes: Raw = _ABSENT
    output_dtypes: Raw = _ABSENT
    frames: Raw = _ABSENT
    time_created_ns: Raw = _ABSENT
    time_discovered_started_ns: Raw = _ABSENT
    duration_ms: Raw = _ABSENT

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, _ABSENT)
        if type(value) is Raw:
            return msgspec.json.decode(value) if value else default
        return value

    def __getitem__(self, key: str) -> Any:
        if key not in self:
            raise KeyError(key)
        return self.get(key)

    def __contains__(self, key: str) -> bool:
        value = getattr(self, key, _ABSENT)
        return not (type(value) is Raw and not value)


class _Document(Struct):
    """The top level; the fields that make a document something else than a dump are only
    looked for (it is then read by the generic decoder, which tells which)."""

    entries: list[JsonEntry] | None | UnsetType = UNSET
    version: Raw = _ABSENT
    rank: Raw = _ABSENT
    pg_config: Raw = _ABSENT
    pg_status: Raw = _ABSENT
    nccl_version: Raw = _ABSENT
    comm_lib_version: Raw = _ABSENT
    kind: Raw = _ABSENT
    communicators: Raw = _ABSENT
    event: Raw = _ABSENT


_DECODER = msgspec.json.Decoder(_Document)
_TOP = ("version", "rank", "pg_config", "pg_status", "nccl_version", "comm_lib_version")


def typed_dump(data: bytes) -> dict[str, Any] | None:
    """The dump as a dict whose ``entries`` are JsonEntry structs (the other fields decoded as
    the generic decoder does); None where the typed reading does not fit."""
    try:
        document = _DECODER.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    if document.kind or document.communicators or document.event or not document.version:
        return None
    dump: dict[str, Any] = {name: msgspec.json.decode(getattr(document, name))
                            for name in _TOP if getattr(document, name)}
    if document.entries is not UNSET:
        dump["entries"] = document.entries
    return dump


def any_value(entries: list[Any], key: str) -> bool:
    """``any(e.get(key) for e in entries)``, decoding only the entries that carry the field
    (a JSON dump carries no frames: 2 000 Python calls saved per dump)."""
    return any(map(msgspec.json.decode, filter(None, map(attrgetter(key), entries))))


def any_field(entries: list[Any], key: str) -> bool:
    """``any(key in e for e in entries)``."""
    return any(map(attrgetter(key), entries))
