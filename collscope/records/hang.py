"""The JSON Lines records of `collscope hang` (schema; the run record is records.run's
RunRecord): one ``hang_group`` per process group (or ncclras communicator), then exactly one
``hang_verdict``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class HangMemberRecord:
    """What one member did at its group's stuck number (``did``: a cause, waiting, ahead)."""

    rank: int
    did: str
    host: str | None = None
    issued: int | None = None        # the last number it issued on the channel
    completed: int | None = None     # the last number it completed
    op: str | None = None            # its entry at the stuck number, or its last one
    at: str | None = None            # where its user code called that entry (file:line)


@dataclass
class HangChannelRecord:
    """A group's collectives, or one pair's point-to-point ops in it."""

    channel: str                     # "collectives" or "p2p A<->B"
    stuck: bool
    seq: int | None
    op: str | None
    cause: str
    culprit_ranks: list[int]
    waiting_ranks: list[int]
    members: list[HangMemberRecord]
    note: str = ""


@dataclass
class HangGroupRecord:
    """One process group (``source`` flight_recorder) or ncclras communicator (``ncclras``)."""

    group: str
    desc: str
    ranks: list[int]
    members_inferred: bool           # gloo sub-groups: members known only from the entries
    stuck: bool
    cause: str                       # the worst of its channels
    culprit_ranks: list[int]
    channels: list[HangChannelRecord]
    source: str = "flight_recorder"
    kind: str = "hang_group"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class HangVerdictRecord:
    """The verdict: ``culprit_ranks`` sorted, [] when nothing is wrong; ``cause`` one of
    collscope.hang.Cause; ``hosts`` {rank: host} where known."""

    culprit_ranks: list[int]
    waiting_ranks: list[int]
    cause: str
    group: str | None
    collective: str | None
    seq: int | None
    hosts: dict[str, str]
    headline: str
    origins: list[dict[str, Any]] = field(default_factory=list)
    missing_ranks: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    method: str = ""
    kind: str = "hang_verdict"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
