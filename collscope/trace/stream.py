"""Reading a trace file as a stream of event batches, so that memory does not grow with it.

A Kineto trace is one JSON object whose ``traceEvents`` array holds nearly all of its bytes
(hundreds of MB per rank in real jobs). The file is gunzipped block by block and the array cut
into pieces of about CHUNK_BYTES at element boundaries; msgspec decodes each piece into the
same typed ``Event`` structs as a whole-file decode would, and the caller reduces them before
the next piece is read. Everything outside the array (``distributedInfo``, ``host_name``, ...)
is decoded once, as a ``TraceDoc`` with no events.

Cutting needs no JSON tokenizer of our own: a piece is cut where ``}``, ``,`` and ``{`` follow
each other (whitespace between), which is where one event object ends and the next begins.
The same three characters inside a string or a nested list of objects would cut an element
in two; then ``[`` + piece + ``]`` is not valid JSON (a string or an object is left open), the
decode says so, and an earlier cut is tried. So a piece is decoded only when it is whole
elements, and the events are the ones a whole-file decode gives.

A file this does not fit (no ``traceEvents`` array where expected, elements that are not
events, bad JSON, a corrupt gzip) raises ``NotStreamable``: the caller then reads it whole
(``events.load_trace``), which either decodes it or names what is wrong with it.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from collscope.trace.events import Event, TraceDoc

CHUNK_BYTES = 8 << 20        # JSON decoded at once: ~25k events, ~10 MB of structs
READ_BYTES = 1 << 20         # read from the file at once (gzip: ~10x that unpacked)
_ARRAY_START = re.compile(rb'"traceEvents"\s*:\s*\[')
_BETWEEN_EVENTS = re.compile(rb"\}\s*,\s*\{")
_LAST_CUTS = 8               # cuts tried per piece before reading on and trying a longer one
_TAIL_TRIES = 1000           # closing brackets tried for the array's end

_EVENTS = msgspec.json.Decoder(list[Event])
_OUTSIDE = msgspec.json.Decoder(TraceDoc)


class NotStreamable(Exception):
    """The file is not a trace this reader can cut into pieces; read it whole instead."""


def json_blocks(path: Path) -> Iterator[bytes]:
    """The file's JSON bytes in blocks, gunzipped when it is gzip (by content, not by name;
    several gzip members are read one after another, as gzip does)."""
    try:
        with path.open("rb") as file:
            first = file.read(READ_BYTES)
            if first[:2] != b"\x1f\x8b":
                block = first
                while block:
                    yield block
                    block = file.read(READ_BYTES)
                return
            unpack = zlib.decompressobj(zlib.MAX_WBITS | 16)
            block = first
            while block:
                yield unpack.decompress(block)
                while unpack.eof and unpack.unused_data:        # the next gzip member
                    rest = unpack.unused_data
                    unpack = zlib.decompressobj(zlib.MAX_WBITS | 16)
                    yield unpack.decompress(rest)
                block = file.read(READ_BYTES)
            if not unpack.eof:
                raise NotStreamable("truncated gzip")
    except (OSError, zlib.error) as error:
        raise NotStreamable(str(error)) from None


def stream_events(path: Path, consume: Callable[[list[Event]], None]) -> TraceDoc:
    """Feeds the trace's events to ``consume`` in file order, a batch at a time; returns what
    lies outside the events (a ``TraceDoc`` with an empty ``traceEvents``)."""
    blocks = json_blocks(path)
    buffer = bytearray()
    found = None                          # the array's opening, once ``buffer`` holds it
    for block in blocks:
        buffer += block
        found = _ARRAY_START.search(buffer)
        if found is not None:
            break
    if found is None:
        raise NotStreamable("no traceEvents array")
    head = bytes(buffer[:found.start()])
    del buffer[:found.end()]              # the array's elements begin here
    window = 1 << 16                      # how far back from the end cuts are looked for
    for block in blocks:
        buffer += block
        if len(buffer) < CHUNK_BYTES:
            continue
        cut = _decode_whole_elements(buffer, window, consume)
        if cut is None:                   # no cut decoded: a longer piece next time
            window *= 2
            continue
        window = 1 << 16
        del buffer[:cut]
    return _finish(head, buffer, consume)


def _decode_whole_elements(buffer: bytearray, window: int,
                           consume: Callable[[list[Event]], None]) -> int | None:
    """Decodes the longest run of whole elements at the start of ``buffer`` that ends at one
    of the last cuts; returns where the next element begins (None: no cut decoded)."""
    low = max(0, len(buffer) - window)
    cuts = [m for m in _BETWEEN_EVENTS.finditer(buffer, low)][-_LAST_CUTS:]
    for cut in reversed(cuts):
        try:
            events = _EVENTS.decode(b"[" + buffer[:cut.start() + 1] + b"]")
        except msgspec.DecodeError:       # cut inside a string or a nested object
            continue
        consume(events)
        return cut.end() - 1              # the next element's "{"
    return None


def _finish(head: bytes, buffer: bytearray, consume: Callable[[list[Event]], None]) -> TraceDoc:
    """The last elements and what follows the array: the array ends at the last "]" after
    which the rest of the object decodes and before which whole elements end."""
    end = len(buffer)
    for _ in range(_TAIL_TRIES):
        end = buffer.rfind(b"]", 0, end)
        if end < 0:
            break
        try:
            outside = _OUTSIDE.decode(head + b'"traceEvents": []' + buffer[end + 1:])
        except msgspec.DecodeError:
            continue
        content = bytes(buffer[:end]).rstrip()
        if content and not content.endswith(b"}"):
            continue
        try:
            consume(_EVENTS.decode(b"[" + content + b"]"))
        except msgspec.DecodeError as error:
            raise NotStreamable(str(error)) from None
        return outside
    raise NotStreamable("no end of the traceEvents array")
