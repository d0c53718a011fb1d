"""The ``finding`` record: a problem found, with its fix (trace, bench --per-rank)."""

from __future__ import annotations

from typing import ClassVar, Literal

from collscope.records.base import Record


class FindingRecord(Record, tag="finding"):
    """A problem found, with its fix, ranked by the step time at stake (ms per step)."""

    id: str
    level: Literal["info", "warn"]
    title: str
    detail: str
    fix: str
    at_stake_ms: float
    rank: int | None = None
    test: str = ""                    # the statistical test or rule that made the decision

    joins: ClassVar[str | None] = "trace"
