"""``doctor --json FILE``: the run record, one doctor_finding per finding (worst first), one
doctor_node per node, written through the records layer's one JSON Lines writer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from collscope.records.doctor import DoctorFindingRecord, DoctorNodeRecord
from collscope.records.jsonl import write_records
from collscope.records.run import RunRecord


def write_doctor_records(path: str, findings: Iterable[Any], nodes: list[DoctorNodeRecord], *,
                         launcher: str, backend: str = "", world_size: int = 1,
                         from_bundle: bool = False) -> None:
    """``findings`` (doctor Findings) and ``nodes`` as JSON Lines to ``path`` ('-': stdout).
    A bundle's run record keeps no environment: the bundle's is another machine's."""
    from collscope.versions import library_versions

    run = RunRecord.create(
        "doctor", launcher=launcher, backend=backend, world_size=world_size,
        nodes=len(nodes), ranks_per_node=max((len(n.ranks) for n in nodes), default=1),
        hosts=[n.host for n in nodes], devices=[], timing="",
        extra={"source": "bundle"} if from_bundle else {},
        versions=library_versions(with_torch=False), env={} if from_bundle else None)
    records = [run.to_dict()]
    records += [DoctorFindingRecord(**finding.to_dict()).to_dict() for finding in findings]
    records += [node.to_dict() for node in nodes]
    write_records(path, records)
