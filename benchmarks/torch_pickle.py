"""A pickle writer that gives a Flight Recorder dump the bytes torch's C++ pickler gives it
(torch/csrc/jit/serialization/pickler.cpp, protocol 2), so that benchmarks/hang_scale.py reads
what NCCL writes rather than what Python's pickler writes for the same data: Python's memoises
every dict, list and tuple and picks other opcodes for numbers; torch's memoises strings by
value and a container only where it is shared (a stack frame, referenced by every entry that
ran through it, and the root). tests/unit/hang/test_torch_pickle.py checks the writer byte
for byte against every real pickle dump in tests/fixtures.

The rules, as torch applies them: a string is written once (BINUNICODE, then memoised) and
fetched from the memo after that; a dict, list or tuple seen more than once is written once
and memoised; an int is BININT1/BININT2 when it fits unsigned in 1/2 bytes, BININT in 4 signed
bytes, LONG1 in 8 bytes otherwise; a float is BINFLOAT; dicts and lists open with a MARK even
when empty; tuples of up to three items use TUPLE1-3."""

from __future__ import annotations

import struct
from collections import Counter
from typing import Any

_TUPLE_OPS = {0: b")", 1: b"\x85", 2: b"\x86", 3: b"\x87"}


def dumps(data: Any) -> bytes:
    """``data`` (dicts, lists, tuples, strings, numbers, bools, None) as torch pickles it."""
    uses: Counter[int] = Counter()
    _count(data, uses)
    # The root too: the pickler holds a reference of its own to it.
    writer = _Writer({key for key, count in uses.items() if count > 1} | {id(data)})
    writer.value(data)
    return b"\x80\x02" + b"".join(writer.out) + b"."


def _count(data: Any, uses: Counter[int]) -> None:
    if isinstance(data, (dict, list, tuple)):
        uses[id(data)] += 1
        if uses[id(data)] == 1:
            items = (x for pair in data.items() for x in pair) if isinstance(data, dict) \
                else data
            for item in items:
                _count(item, uses)


class _Writer:
    def __init__(self, shared: set[int]) -> None:
        self.shared = shared
        self.out: list[bytes] = []
        self.memo: dict[Any, int] = {}       # a string by value, a container by id

    def value(self, data: Any) -> None:
        if isinstance(data, str):
            self._memoised(data, self._string)
        elif isinstance(data, (dict, list, tuple)):
            if id(data) in self.shared:
                self._memoised(id(data), lambda _: self._container(data))
            else:
                self._container(data)
        elif data is None:
            self.out.append(b"N")
        elif isinstance(data, bool):
            self.out.append(b"\x88" if data else b"\x89")
        elif isinstance(data, int):
            self.out.append(_int(data))
        elif isinstance(data, float):
            self.out.append(b"G" + struct.pack(">d", data))
        else:
            raise TypeError(f"torch's pickler writes no {type(data).__name__} in a dump")

    def _memoised(self, key: Any, write: Any) -> None:
        index = self.memo.get(key)
        if index is not None:
            self.out.append(b"h" + bytes([index]) if index < 256
                            else b"j" + struct.pack("<I", index))
            return
        write(key)
        index = self.memo[key] = len(self.memo)
        self.out.append(b"q" + bytes([index]) if index < 256 else b"r" + struct.pack("<I", index))

    def _string(self, text: str) -> None:
        raw = text.encode("utf-8", "surrogatepass")
        self.out.append(b"X" + struct.pack("<I", len(raw)) + raw)

    def _container(self, data: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> None:
        if isinstance(data, dict):
            self.out.append(b"}(")
            for key, item in data.items():
                self.value(key)
                self.value(item)
            self.out.append(b"u")
        elif isinstance(data, list):
            self.out.append(b"](")
            for item in data:
                self.value(item)
            self.out.append(b"e")
        else:
            if len(data) > 3:
                self.out.append(b"(")
            for item in data:
                self.value(item)
            self.out.append(_TUPLE_OPS.get(len(data), b"t"))


def _int(value: int) -> bytes:
    if 0 <= value < 1 << 8:
        return b"K" + bytes([value])
    if 0 <= value < 1 << 16:
        return b"M" + struct.pack("<H", value)
    if -(1 << 31) <= value < 1 << 31:
        return b"J" + struct.pack("<i", value)
    return b"\x8a\x08" + struct.pack("<q", value)
