"""``collscope doctor --json FILE``'s records: one ``doctor_finding`` per finding (worst first)
and one ``doctor_node`` per node checked, after the run record."""

from __future__ import annotations

from typing import Any, ClassVar

from collscope.records.base import Record


class DoctorFindingRecord(Record, tag="doctor_finding"):
    """One result of one check: what was found, why it matters, how to fix it."""

    id: str                           # the check, e.g. env.ib-hca (doctor --explain ID)
    level: str                        # fail, warn, info or ok
    area: str
    title: str
    detail: str = ""
    fix: str = ""

    joins: ClassVar[str | None] = "doctor"


class DoctorNodeRecord(Record, tag="doctor_node"):
    """One node checked (this host, a bundle, or each node of --all-ranks): what it has."""

    node: int
    host: str
    ranks: list[int] = []
    summary: dict[str, str] = {}      # facts that must agree
    inventory: dict[str, Any] = {}

    joins: ClassVar[str | None] = "doctor"
