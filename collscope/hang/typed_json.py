"""A Flight Recorder JSON dump decoded straight into what the reduction reads (pure).

msgspec decodes each entry into the one entry model,
:class:`collscope.parsers.flight_recorder.FlightEntry` (watch's too): the fields the reduction
compares typed, the fields only a kept entry shows kept as raw JSON bytes, every other field
skipped while parsing. That is 2x faster than decoding every entry into a dict
(benchmarks/hang_scale.py) and builds no per-entry dict. An entry answers ``get``, ``[]`` and
``in`` as its dict would, so one code (dumps.py) reads pickled dumps and these. Any document
this shape does not fit (a field missing or of another type, invalid UTF-8, a document that is
not a dump) gives None and is read by the generic decoder instead: the outcome is the same,
only slower."""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter, is_not
from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from collscope.parsers.flight_recorder import FlightEntry

_ABSENT = Raw()           # an empty Raw: the field is not in the document


# Deliberately the shape of parsers/flight_recorder.py's FlightEntry (fields left raw until
# asked), for the dump's top level, which watch does not read: not the entry's fields.
class _Document(Struct):
    """The top level; the fields that make a document something else than a dump are only
    looked for (it is then read by the generic decoder, which tells which)."""

    entries: list[FlightEntry] | None | UnsetType = UNSET
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
    """``any(key in e for e in entries)`` for a field typed with UNSET for absent."""
    return any(map(is_not, map(attrgetter(key), entries), repeat(UNSET)))
