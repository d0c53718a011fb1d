"""Reading one Kineto / Chrome trace file (``.json`` or ``.json.gz``) into typed events.

Only the fields collscope uses are decoded: msgspec decodes straight into these structs and
skips everything else (call stacks, module hierarchy, most args, flow events' payloads),
which is what keeps a large trace fast to read and small in memory. On the largest fixture
trace (54 MB of JSON) benchmarks/trace_speed.py measures stdlib json, orjson and msgspec into
dicts at 0.40-0.47 s and 161-201 MB held, msgspec into these structs at 0.17 s and 102 MB.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

import msgspec

from collscope.errors import UsageError


class TraceInputError(UsageError):
    """A file that is not a usable trace; the message names the file and what is wrong."""


class Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` of an event, only the keys that place or size a collective. Typed ``Any``:
    profilers of different versions write the same key as int, float or string, and one odd
    value must not reject the file (the readers in ``rank`` coerce)."""

    correlation: Any = None
    stream: Any = None
    collective: Any = msgspec.field(default=None, name="Collective name")
    in_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    dtype: Any = None
    group_size: Any = msgspec.field(default=None, name="Group size")
    group_name: Any = msgspec.field(default=None, name="Process Group Name")
    group_desc: Any = msgspec.field(default=None, name="Process Group Description")
    group_ranks: Any = msgspec.field(default=None, name="Process Group Ranks")
    seq: Any = msgspec.field(default=None, name="Seq")
    seq_lower: Any = msgspec.field(default=None, name="seq")   # some profilers' spelling
    input_dims: Any = msgspec.field(default=None, name="Input Dims")
    input_type: Any = msgspec.field(default=None, name="Input type")


class Event(msgspec.Struct, frozen=True, gc=False):
    ph: Any = ""
    name: Any = ""
    cat: Any = ""
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    args: Args | None = None


class TraceDoc(msgspec.Struct):
    traceEvents: list[Event]  # noqa: N815 - the file's own key
    distributedInfo: Any = None  # noqa: N815
    deviceProperties: Any = None  # noqa: N815
    host_name: Any = None


_DECODER = msgspec.json.Decoder(TraceDoc)


def read_bytes(path: Path) -> bytes:
    """The file's JSON bytes, gunzipped when it is gzip (by content, not by name)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise TraceInputError(f"{path}: cannot read it ({error.strerror or error})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as error:
            raise TraceInputError(f"{path}: truncated or corrupt gzip ({error}); expected a "
                                  "whole .json.gz trace") from None
    return data


def parse_trace(data: bytes, path: Path) -> TraceDoc:
    """Decode a trace; a file that is not a Chrome trace with ``traceEvents`` raises
    TraceInputError naming the file."""
    try:
        return _DECODER.decode(data)
    except msgspec.ValidationError as error:
        raise TraceInputError(f"{path}: not a torch.profiler / Chrome trace ({error}); expected "
                              "a JSON object with a traceEvents list") from None
    except msgspec.DecodeError as error:
        raise TraceInputError(f"{path}: not valid JSON ({error}); expected a torch.profiler "
                              "trace (.json or .json.gz)") from None


def load_trace(path: str | Path) -> TraceDoc:
    path = Path(path)
    return parse_trace(read_bytes(path), path)
