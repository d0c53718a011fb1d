"""The text of a captured log or tool output, as users really save them (pure: bytes in, str out).

One decoder for every reader (import, report, compare, model fit, doctor ``--from``), so a file
reads the same everywhere:

- compressed: gzip, bzip2 and xz are recognised by their magic bytes (``nccl.log.gz`` from a
  log rotation, a CI artefact), whatever the name says; decompressed output is bounded;
- encodings: a byte-order mark selects UTF-8, UTF-16 or UTF-32 (PowerShell's ``>`` writes
  UTF-16 LE with a BOM); UTF-16 without one is recognised by its NUL bytes; otherwise UTF-8,
  and a line that is not UTF-8 (a Latin-1 host name) is read as Windows-1252/Latin-1, so its
  characters stay distinct instead of all becoming U+FFFD;
- terminal residue: ANSI escape sequences (colours, cursor moves) and NUL bytes (a file
  preallocated, a crash mid-write) are removed. Line breaks are kept as they are: the parsers
  handle CRLF and ``\\r`` progress lines, and line numbers must not move.
"""

from __future__ import annotations

import bz2
import codecs
import lzma
import re
import zlib
from collections.abc import Callable
from typing import Protocol

MAX_DECOMPRESSED_BYTES = 1 << 30      # a log larger than 1 GiB unpacked is not a log

class _Decompressor(Protocol):
    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes, /) -> bytes: ...


# Magic bytes -> (name, a fresh incremental decompressor): gzip members, bzip2 and xz streams.
_COMPRESSED: dict[bytes, tuple[str, Callable[[], _Decompressor]]] = {
    b"\x1f\x8b": ("gzip", lambda: zlib.decompressobj(wbits=31)),
    b"BZh": ("bzip2", bz2.BZ2Decompressor),
    b"\xfd7zXZ\x00": ("xz", lzma.LZMADecompressor),
}
_CHUNK = 1 << 16          # input fed per step: the output bound is checked between steps
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
# CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \) and two-byte escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


class DecodeError(ValueError):
    """Bytes that look compressed but do not decompress; the message says why."""


def compression(head: bytes) -> str | None:
    """"gzip", "bzip2" or "xz" when ``head`` (a file's first bytes) has that magic, else None."""
    return next((name for magic, (name, _) in _COMPRESSED.items() if head.startswith(magic)),
                None)


def decompress(data: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """``data`` unpacked when it starts with a gzip, bzip2 or xz magic, else as it is.

    Concatenated members (``cat a.gz b.gz``) are all unpacked. A file cut short (a job killed
    while its log was compressed on the fly) keeps what unpacked, as ``zcat`` does; the
    parsers then see a truncated log. DecodeError when nothing unpacks or the output would
    exceed ``limit``."""
    magic = next((m for m in _COMPRESSED if data.startswith(m)), None)
    if magic is None:
        return data
    name, fresh = _COMPRESSED[magic]
    out: list[bytes] = []
    size, rest = 0, data
    while rest.startswith(magic):
        decompressor = fresh()
        try:
            for at in range(0, len(rest), _CHUNK):
                piece = decompressor.decompress(rest[at:at + _CHUNK])
                size += len(piece)
                out.append(piece)
                if size > limit:
                    raise DecodeError(f"decompresses to more than {limit >> 20} MiB")
                if decompressor.eof:
                    break
        except (zlib.error, OSError, EOFError, lzma.LZMAError) as error:
            if not size:
                raise DecodeError(f"looks {name}-compressed but does not decompress: "
                                  f"{error}") from None
            break                      # corrupt after good data: keep what unpacked
        if not decompressor.eof:
            break                      # cut short: keep what unpacked
        rest = decompressor.unused_data
    return b"".join(out)


def _encoding(data: bytes) -> tuple[str | None, int]:
    """(encoding, BOM length) from a byte-order mark or UTF-16's NUL pattern; None: UTF-8."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom)
    head = data[:4096]
    if len(head) >= 8:
        odd, even = head[1::2].count(0), head[0::2].count(0)
        # ASCII text as UTF-16: every other byte NUL. (A few stray NULs are not that.)
        if odd >= 0.4 * len(head) / 2 and even < 0.05 * len(head) / 2:
            return "utf-16-le", 0
        if even >= 0.4 * len(head) / 2 and odd < 0.05 * len(head) / 2:
            return "utf-16-be", 0
    return None, 0


def _lines_utf8_or_latin1(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return "".join(_line_text(line) for line in data.splitlines(keepends=True))


def _line_text(line: bytes) -> str:
    for encoding in ("utf-8", "cp1252"):
        try:
            return line.decode(encoding)
        except UnicodeDecodeError:
            continue
    return line.decode("latin-1")      # every byte is a character: never fails


def decode_capture(data: bytes) -> str:
    """The text of a captured file (see the module docstring); DecodeError only for bytes
    that claim a compression and do not decompress."""
    data = decompress(data)
    encoding, skip = _encoding(data)
    if encoding is None:
        text = _lines_utf8_or_latin1(data)
    else:
        text = data[skip:].decode(encoding, errors="replace")
    text = text.removeprefix("\ufeff")
    return _ANSI.sub("", text).replace("\x00", "")

