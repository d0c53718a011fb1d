"""Interval-union arithmetic on (start, end) pairs (pure).

Exposed communication and overlap are measured on the *union* of the kernels of each kind:
two communication kernels on different streams at the same moment count that moment once,
as HolisticTraceAnalysis' ``merge_kernel_intervals`` does.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable

Interval = tuple[float, float]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering the same time; empty ones dropped. Touching
    intervals are joined (HTA joins when a start is not after the previous end)."""
    merged: list[list[float]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def total(disjoint: Iterable[Interval]) -> float:
    return sum(end - start for start, end in disjoint)


def intersection(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """Where both disjoint sorted lists are covered."""
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        start = max(a[i][0], b[j][0])
        end = min(a[i][1], b[j][1])
        if end > start:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def clip(disjoint: list[Interval], start: float, end: float) -> list[Interval]:
    """The part of disjoint sorted intervals inside [start, end]."""
    return [(max(a, start), min(b, end)) for a, b in disjoint if b > start and a < end]


def clipper(disjoint: list[Interval]) -> Callable[[float, float], list[Interval]]:
    """``clip`` of these disjoint sorted intervals to many windows, each by bisection (a trace
    holds hundreds of thousands of kernels and may have hundreds of steps)."""
    ends = [b for _, b in disjoint]

    def clipped(start: float, end: float) -> list[Interval]:
        out: list[Interval] = []
        for i in range(bisect.bisect_right(ends, start), len(disjoint)):
            a, b = disjoint[i]
            if a >= end:
                break
            out.append((max(a, start), min(b, end)))
        return out
    return clipped


def difference(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """The part of disjoint sorted ``a`` not covered by disjoint sorted ``b``."""
    out: list[Interval] = []
    j = 0
    for start, end in a:
        while j < len(b) and b[j][1] <= start:
            j += 1
        k = j
        cursor = start
        while k < len(b) and b[k][0] < end:
            if b[k][0] > cursor:
                out.append((cursor, b[k][0]))
            cursor = max(cursor, b[k][1])
            k += 1
        if cursor < end:
            out.append((cursor, end))
    return out
