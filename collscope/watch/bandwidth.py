"""Achieved bandwidth of a rank's collectives from its Flight Recorder durations (pure).

For each completed entry with a ``duration_ms`` (NCCL/RCCL with TORCH_NCCL_ENABLE_TIMING=1;
gloo never records one), its size as nccl-tests counts it: the larger of the entry's input and
output bytes, each the sum over its tensors of elements x element size (so all_gather's whole
gathered output, reduce_scatter's whole input, alltoall's whole buffer, the message of the
others). Per process group and collective, an interval's calls are summed (calls, bytes,
microseconds), and the rank's rates are those of the sums:

  algbw = sum of sizes / sum of durations (GB/s, 1e9 B/s)
  busbw = algbw x nccl-tests' factor for the collective and the group's size
          (collscope.collectives.table: 2(n-1)/n all_reduce, (n-1)/n all_gather,
          reduce_scatter, alltoall, 1 broadcast and reduce)

so a call weighs by its size and time, not by its count (a thousand tiny all_reduces do not
hide the large ones). Point-to-point entries, names outside the table (barrier, gather,
scatter, ``coalesced`` markers), unknown dtypes and groups of one rank are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from collscope.collectives.names import (
    DTYPE_SIZES,
    canonical_trace_dtype,
    collective_from_annotation,
)
from collscope.collectives.table import COLLECTIVES, bandwidths
from collscope.parsers.flight_recorder import FlightEntry


@dataclass
class Timed:
    """The calls of one collective in one group over an interval, summed."""

    calls: int = 0
    size_bytes: int = 0
    duration_us: float = 0.0

    def add(self, size_bytes: int, duration_us: float) -> None:
        self.calls += 1
        self.size_bytes += size_bytes
        self.duration_us += duration_us

    def rates(self, collective: str, group_size: int) -> tuple[float, float]:
        """(algbw, busbw) in GB/s of the sums."""
        return bandwidths(self.size_bytes, self.duration_us, collective, group_size)


_SIZES = msgspec.json.Decoder(list[list[int]])
_DTYPES = msgspec.json.Decoder(list[str])


def _side(sizes: msgspec.Raw, dtypes: msgspec.Raw) -> int | None:
    """Bytes of one side of an entry, its raw JSON decoded now (only timed entries are
    asked); None where the dump holds something else than lists of shapes and dtype names."""
    try:
        return _bytes(_SIZES.decode(sizes) if sizes else [],
                      _DTYPES.decode(dtypes) if dtypes else [])
    except msgspec.DecodeError:
        return None


def _bytes(sizes: list[list[int]], dtypes: list[str]) -> int | None:
    """Bytes of an entry's tensors (sizes and dtypes side by side); None if a dtype is not
    known."""
    total = 0
    for shape, dtype in zip(sizes, dtypes):
        element = DTYPE_SIZES.get(canonical_trace_dtype(dtype) or "")
        if element is None:
            return None
        total += math.prod(shape) * element
    return total


def collective_of(entry: FlightEntry) -> str | None:
    """The nccl-tests name of an entry's collective (``nccl:_allgather_base`` ->
    ``all_gather``); None for point-to-point entries and names nccl-tests does not run."""
    if entry.is_p2p:
        return None
    name = collective_from_annotation(entry.profiling_name)
    return name if name in COLLECTIVES and name != "sendrecv" else None


def size_bytes(entry: FlightEntry) -> int | None:
    """nccl-tests' size of the call: the larger of its input and output bytes."""
    sides = [_side(entry.input_sizes, entry.input_dtypes),
             _side(entry.output_sizes, entry.output_dtypes)]
    known = [b for b in sides if b is not None]
    return max(known) if known else None


def tally(entries: Iterable[FlightEntry], group_sizes: dict[str, int]
          ) -> dict[str, tuple[int, dict[str, Timed]]]:
    """group -> (its size, collective -> the summed timed calls) over ``entries`` (those
    whose durations are new this interval)."""
    out: dict[str, tuple[int, dict[str, Timed]]] = {}
    for entry in entries:
        collective, members = collective_of(entry), group_sizes.get(entry.group)
        size = size_bytes(entry)
        if collective is None or members is None or members < 2 or not size or \
                (duration_ms := entry.timed_ms) is None or duration_ms <= 0:
            continue
        _, ops = out.setdefault(entry.group, (members, {}))
        ops.setdefault(collective, Timed()).add(size, duration_ms * 1000.0)
    return out
