"""The JSON Lines records of `collscope hang` (schema; the run record is records.run's
RunRecord): one ``hang_group`` per process group (or ncclras communicator), then exactly one
``hang_verdict``."""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from collscope.records.base import Record


class HangMemberRecord(msgspec.Struct):
    """What one member did at its group's stuck number (``did``: a cause, waiting, ahead)."""

    rank: int
    did: str
    host: str | None = None
    issued: int | None = None        # the last number it issued on the channel
    completed: int | None = None     # the last number it completed
    op: str | None = None            # its entry at the stuck number, or its last one
    at: str | None = None            # where its user code called that entry (file:line)


class HangChannelRecord(msgspec.Struct):
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


class HangGroupRecord(Record, tag="hang_group"):
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

    joins: ClassVar[str | None] = "hang"


class HangVerdictRecord(Record, tag="hang_verdict"):
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
    origins: list[dict[str, Any]] = []
    missing_ranks: list[int] = []
    notes: list[str] = []
    next_steps: list[str] = []
    method: str = ""

    joins: ClassVar[str | None] = "hang"
