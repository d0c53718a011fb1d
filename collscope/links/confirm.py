"""Confirmation of failing links (pure): which rounds to run again, and how tries combine.

One measurement of a link can be slow by accident: a scheduler hiccup, a transient burst of
other traffic through the same switch. Before ``links`` calls a link slow it runs again, under
the same conditions (the whole round that held it, with the same concurrent pairs), every round
that holds a failing link, up to ``--confirm`` times. A link keeps a failing verdict only if it
fails on every try: its ``gbs`` becomes its best try, judged against the threshold of the first
full measurement (fixed, so confirmations cannot move it), and ``tries_gbs`` lists each try. A
degraded link or node is slow every time and stays named; noise has to repeat to be reported.
A try re-measures each failing pair at its deciding size, and a try below the first size can
fail a direction but not clear it (links.budget: why, and how the try stops early).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from collscope.links import budget
from collscope.links.verdicts import FAIL_VERDICTS, Threshold, link_limit
from collscope.records.links import LinkRecord
from collscope.units import format_size

# {"scope", "round", "src", "dst", "size", "times", "latency", "stop"[, "tries"]}
Measurement = dict[str, Any]


Key = tuple[str, int, int]           # (scope, src rank, dst rank): one direction


def rounds_to_confirm(links: Sequence[LinkRecord]) -> list[tuple[str, int]]:
    """(scope, round index) of every round holding a failing link, in measurement order."""
    return sorted({(link.scope, link.round) for link in links if link.verdict in FAIL_VERDICTS},
                  key=lambda key: (key[0] != "inter", key[1]))


def failing_directions(links: Sequence[LinkRecord]) -> set[Key]:
    return {(link.scope, link.src_rank, link.dst_rank) for link in links
            if link.verdict in FAIL_VERDICTS}


@dataclass(frozen=True)
class Retry:
    """What one confirmation try runs: the rounds again, the limit (GB/s) of every failing
    direction, and the size of every pair holding one (keyed by scope and the pair's ranks,
    lower first); the round's other pairs run at the first size, as before."""

    rounds: list[tuple[str, int]]
    limits: dict[Key, float]
    sizes: dict[Key, int]


def pair_key(scope: str, a: int, b: int) -> Key:
    return scope, min(a, b), max(a, b)


def plan(links: Sequence[LinkRecord], measured: Sequence[Measurement],
         thresholds: Sequence[Threshold], expected_fraction: float, size_bytes: int) -> Retry:
    """The next confirmation try. A pair's size is the larger deciding size of its failing
    directions (links.budget.deciding_size, with the pair's latency: the lesser of its two
    ends')."""
    latency = {(m["scope"], m["src"], m["dst"]): m["latency"] for m in measured}
    spread = {(m["scope"], m["src"], m["dst"]): budget.spread(m["times"]) for m in measured}
    limits: dict[Key, float] = {}
    sizes: dict[Key, int] = {}
    for link in links:
        if link.verdict not in FAIL_VERDICTS:
            continue
        key = (link.scope, link.src_rank, link.dst_rank)
        limits[key] = link_limit(link, thresholds, expected_fraction)
        pair = pair_key(*key)
        size = budget.deciding_size(size_bytes, min(latency.get(key, 0.0), latency.get(
            (link.scope, link.dst_rank, link.src_rank), math.inf)), link.gbs, limits[key],
            spread.get(key, 0.0))
        sizes[pair] = max(sizes.get(pair, 4), size)
    return Retry(rounds_to_confirm(links), limits, sizes)


def cleared_below_full_size(again: Sequence[Measurement], limits: dict[Key, float],
                            size_bytes: int) -> set[Key]:
    """Directions under test that passed at a size below the first measurement's. A smaller
    message can fit in a shaper's burst (a token bucket lets its depth through at line rate)
    and look faster than the link is, so such a pass does not clear the direction: it is
    measured again at the full size. (Failing at the smaller size is conclusive: latency and
    bursts can only make a small message look slow by less than the deciding size allows, or
    fast.)"""
    return {key for m in again
            if (key := (m["scope"], m["src"], m["dst"])) in limits and m["size"] < size_bytes
            and rate_gbs(m) >= limits[key]}


def rate_gbs(m: Measurement) -> float:
    """A measurement's GB/s: its size over its median time."""
    return m["size"] / statistics.median(m["times"]) / 1e9


def merge_tries(measured: list[Measurement], again: Sequence[Measurement],
                failing: set[Key]) -> int:
    """Add each re-measured failing direction's try to its measurement, keeping the fastest
    try (highest GB/s; tries may differ in size) as the link's; directions that already
    passed keep their first measurement. The number of directions updated."""
    by_key = {(m["scope"], m["src"], m["dst"]): m for m in measured}
    updated = 0
    for m in again:
        key = (m["scope"], m["src"], m["dst"])
        if key not in failing or key not in by_key:
            continue
        first = by_key[key]
        first.setdefault("tries", [_try(first)]).append(_try(m))
        first["latency"] = min(first["latency"], m["latency"])
        if rate_gbs(m) > rate_gbs(first):
            first.update(_try(m))
        updated += 1
    return updated


def _try(m: Measurement) -> dict[str, Any]:
    return {"size": m["size"], "times": m["times"], "stop": m["stop"]}


@dataclass(frozen=True)
class Confirmation:
    """One confirmation try: rounds run again (and their sizes), failing directions before
    and after it."""

    attempt: int
    rounds: int
    failing_before: int
    failing_after: int
    sizes: list[int] = field(default_factory=list)      # bytes per direction: pairs under test

    def text(self) -> str:
        sizes = sorted(set(self.sizes))
        at = f" at {', '.join(format_size(s) for s in sizes)}" if sizes else ""
        return (f"confirmation {self.attempt}: {self.failing_before} failing direction(s) "
                f"re-measured in {self.rounds} round(s) run again{at}; "
                f"{self.failing_before - self.failing_after} cleared, "
                f"{self.failing_after} failed again")
