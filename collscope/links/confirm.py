"""Confirmation of failing links (pure): which rounds to run again, and how tries combine.

One measurement of a link can be slow by accident: a scheduler hiccup, a transient burst of
other traffic through the same switch. Before ``links`` calls a link slow it runs again, under
the same conditions (the whole round that held it, with the same concurrent pairs), every round
that holds a failing link, up to ``--confirm`` times. A link keeps a failing verdict only if it
fails on every try: its ``gbs`` becomes its best try, judged against the threshold of the first
full measurement (fixed, so confirmations cannot move it), and ``tries_gbs`` lists each try. A
degraded link or node is slow every time and stays named; noise has to repeat to be reported.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from collscope.links.verdicts import FAIL_VERDICTS
from collscope.records.links import LinkRecord

Measurement = dict[str, Any]       # {"scope", "round", "src", "dst", "times"[, "tries"]}


def rounds_to_confirm(links: Sequence[LinkRecord]) -> list[tuple[str, int]]:
    """(scope, round index) of every round holding a failing link, in measurement order."""
    return sorted({(link.scope, link.round) for link in links if link.verdict in FAIL_VERDICTS},
                  key=lambda key: (key[0] != "inter", key[1]))


def failing_directions(links: Sequence[LinkRecord]) -> set[tuple[str, int, int]]:
    return {(link.scope, link.src_rank, link.dst_rank) for link in links
            if link.verdict in FAIL_VERDICTS}


def merge_tries(measured: list[Measurement], again: Sequence[Measurement],
                failing: set[tuple[str, int, int]]) -> int:
    """Add each re-measured failing direction's try to its measurement, keeping the fastest
    try's times as the link's; directions that already passed keep their first measurement.
    The number of directions updated."""
    by_key = {(m["scope"], m["src"], m["dst"]): m for m in measured}
    updated = 0
    for m in again:
        key = (m["scope"], m["src"], m["dst"])
        if key not in failing or key not in by_key:
            continue
        first = by_key[key]
        first.setdefault("tries", [first["times"]]).append(m["times"])
        if statistics.median(m["times"]) < statistics.median(first["times"]):
            first["times"] = m["times"]
        updated += 1
    return updated


@dataclass(frozen=True)
class Confirmation:
    """One confirmation try: rounds run again, failing directions before and after it."""

    attempt: int
    rounds: int
    failing_before: int
    failing_after: int

    def text(self) -> str:
        return (f"confirmation {self.attempt}: {self.failing_before} failing direction(s) "
                f"re-measured in {self.rounds} round(s) run again; "
                f"{self.failing_before - self.failing_after} cleared, "
                f"{self.failing_after} failed again")
