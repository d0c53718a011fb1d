"""``collscope doctor --json FILE``'s records: one ``doctor_finding`` per finding (worst first)
and one ``doctor_node`` per node checked, after the run record."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class DoctorFindingRecord:
    """One result of one check: what was found, why it matters, how to fix it."""

    id: str                           # the check, e.g. env.ib-hca (doctor --explain ID)
    level: str                        # fail, warn, info or ok
    area: str
    title: str
    detail: str = ""
    fix: str = ""
    kind: str = "doctor_finding"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DoctorNodeRecord:
    """One node checked (this host, a bundle, or each node of --all-ranks): what it has."""

    node: int
    host: str
    ranks: list[int] = field(default_factory=list)
    summary: dict[str, str] = field(default_factory=dict)   # facts that must agree
    inventory: dict[str, Any] = field(default_factory=dict)
    kind: str = "doctor_node"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
