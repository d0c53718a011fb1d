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
import gzip
import lzma
import re

MAX_DECOMPRESSED_BYTES = 1 << 30      # a log larger than 1 GiB unpacked is not a log

_COMPRESSED = ((b"\x1f\x8b", gzip.open, "gzip"), (b"BZh", bz2.open, "bzip2"),
               (b"\xfd7zXZ\x00", lzma.open, "xz"))
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
# CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \) and two-byte escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


class DecodeError(ValueError):
    """Bytes that look compressed but do not decompress; the message says why."""


def decompress(data: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """``data`` unpacked when it starts with a gzip, bzip2 or xz magic, else as it is."""
    import io

    for magic, opener, name in _COMPRESSED:
        if data.startswith(magic):
            try:
                with opener(io.BytesIO(data), "rb") as stream:
                    unpacked: bytes = stream.read(limit + 1)
            except (OSError, EOFError, lzma.LZMAError) as error:
                raise DecodeError(f"looks {name}-compressed but does not decompress: "
                                  f"{error}") from None
            if len(unpacked) > limit:
                raise DecodeError(f"decompresses to more than {limit >> 20} MiB")
            return unpacked
    return data


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

