"""What a hang analysis concludes, whatever it read (Flight Recorder dumps: hang.job; ncclras
output: hang.ras): the verdict and the evidence behind it. hang.report turns it into records
and text; this module only holds it, so the analyses and the report each depend on it and not
on one another."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from collscope.hang.analysis import ChannelFinding
from collscope.hang.groups import Group
from collscope.hang.model import RankDump
from collscope.hang.verdict import HangVerdict

METHOD = ("per group: entries matched across members by collective_seq_id (p2p: p2p_seq_id "
          "and peer); the first number not completed on every member is classified per "
          "member; across groups the waits form a graph whose sink components are the origin")


@dataclass
class HangAnalysis:
    verdict: HangVerdict
    dumps: list[RankDump] = field(default_factory=list)
    world: tuple[int, ...] = ()
    groups: dict[str, Group] = field(default_factory=dict)
    findings: list[ChannelFinding] = field(default_factory=list)
    missing: dict[int, str] = field(default_factory=dict)     # rank -> why it has no dump
    notes: list[str] = field(default_factory=list)
    group_records: list[dict[str, Any]] = field(default_factory=list)
    source: str = "flight_recorder"
