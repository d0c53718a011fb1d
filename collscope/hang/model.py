"""What `collscope hang` reads, normalised across Flight Recorder versions and backends (pure).

One ``Entry`` per ring-buffer entry (built from the one entry model,
:mod:`collscope.parsers.flight_recorder`, or from a pickled dump's dict), one ``RankDump`` per
rank. The entry's fields, op names and done-ness are
:mod:`collscope.parsers.flight_recorder`'s; what hang adds (torch's analyser
``torch.distributed.flight_recorder`` reads them alike):

- a group is the name plus its members (split groups may reuse a name); gloo writes one
  ``pg_config`` entry keyed ``''``; a ``collective_seq_id`` is the same on every member for
  the same call; a p2p peer is group-local (the i-th of the sorted members).
- ``pg_status`` maps the rank-local ``pg_id`` to the last enqueued / completed sequence
  number, counted in the kind (collective or p2p) of that group's last work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from collscope.parsers.flight_recorder import P2P_OPS


@dataclass(frozen=True)
class GroupKey:
    """A process group: its name (pg_config key / process_group[0]) and its global ranks."""

    name: str
    ranks: tuple[int, ...]

    def local_to_global(self, local: int) -> int | None:
        return self.ranks[local] if 0 <= local < len(self.ranks) else None


@dataclass(frozen=True)
class Frame:
    filename: str
    line: int
    name: str

    def short(self) -> str:
        return f"{self.filename.rsplit('/', 1)[-1]}:{self.line} in {self.name}"


@dataclass(slots=True)
class Entry:
    """One Flight Recorder entry of one rank."""

    record_id: int
    group_name: str
    group_desc: str
    pg_id: int
    seq: int                       # collective_seq_id
    p2p_seq: int                   # p2p_seq_id
    op_id: int                     # counts every op of the group (gloo's pg_status uses it)
    backend: str                   # nccl, gloo, ...
    op: str                        # all_reduce, broadcast, send, recv, coalesced, ...
    peer_local: int | None         # p2p: the other side, group-local rank
    input_sizes: list[Any]
    input_dtypes: list[str]
    output_sizes: list[Any]
    output_dtypes: list[str]
    done: bool
    state: str
    raw_frames: list[Any] = field(default_factory=list)   # as dumped: innermost first
    time_created_ns: int | None = None

    @property
    def is_p2p(self) -> bool:
        return self.op in P2P_OPS

    def describe(self) -> str:
        sizes = ",".join(str(list(s)) if isinstance(s, (list, tuple)) else str(s)
                         for s in self.input_sizes) if self.input_sizes else "[]"
        dtypes = ",".join(map(str, self.input_dtypes)) or "?"
        return f"{self.op} {sizes} {dtypes}"

    @property
    def frames(self) -> list[Frame]:
        """Its stack, outermost first (as stack files and tracebacks list them); made when
        asked: a buffer of 20 000 entries carries 100 000 frames nobody reads."""
        return [Frame(str(f.get("filename", "?")), _int(f.get("line")), str(f.get("name", "?")))
                for f in reversed(self.raw_frames) if isinstance(f, dict)]

    def user_frame(self) -> Frame | None:
        """The innermost frame outside torch and the Python library (where the user's code
        called the collective)."""
        return innermost_user_frame(self.frames)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def innermost_user_frame(frames: list[Frame]) -> Frame | None:
    """The innermost frame of user code in ``frames`` (outermost first): the last one not in
    site-packages, the standard library or collscope's own agent."""
    library = ("site-packages/", "dist-packages/", "/lib/python3", "<frozen", "collscope/")
    for frame in reversed(frames):
        if not any(part in frame.filename for part in library):
            return frame
    return frames[-1] if frames else None


@dataclass
class GroupStatus:
    """pg_status of one group on one rank: last enqueued / completed, in ``kind`` counts."""

    enqueued: int
    completed: int


@dataclass
class RankDump:
    """One rank's Flight Recorder dump."""

    rank: int
    path: str
    host: str | None
    version: str
    fmt: str                              # "pickle" or "json"
    backend: str                          # nccl, gloo, ... ("" when no entry says)
    lib_version: str
    groups: dict[str, tuple[int, ...]]    # pg name -> global ranks (pg_config)
    group_descs: dict[str, str]
    entries: list[Entry]
    status: dict[int, GroupStatus]        # pg_id -> status
    missing_fields: list[str] = field(default_factory=list)
    # Read reduced (hang/reduce.py): per lane, (group name, p2p peer or None) -> the runs of
    # sequence numbers whose entries were left out; empty: every entry is kept.
    dropped: dict[tuple[str, int | None], list[tuple[int, int]]] = field(default_factory=dict)


@dataclass
class StackDump:
    """A rank's Python main-thread stack at dump time (`collscope watch` writes them)."""

    rank: int
    path: str
    host: str | None
    frames: list[Frame]


@dataclass
class NoAnswer:
    """Ranks that did not answer a dump request within its deadline."""

    path: str
    ranks: list[int]
    why: str


class Cause(str, Enum):
    """Why a member of a group holds it back (``none``: nothing is wrong)."""

    NOT_ENTERED = "not_entered"
    OP_MISMATCH = "op_mismatch"
    SIZE_MISMATCH = "size_mismatch"
    DTYPE_MISMATCH = "dtype_mismatch"
    DEAD = "dead_or_unresponsive"
    NOT_COMPLETED = "not_completed"
    NONE = "none"


# What a member did at its group's stuck sequence number: a Cause, or one of these.
WAITING = "waiting"       # issued it, waits for the others
AHEAD = "ahead"           # completed it (and waits later, or is idle)
MISMATCHES = (Cause.OP_MISMATCH, Cause.SIZE_MISMATCH, Cause.DTYPE_MISMATCH)
# The causes, the one that explains a hang best first: a mismatch (the members disagree on
# what they run), then a dead rank (it can enter nothing, so it holds up every group it is in),
# then one that never entered, then one that entered and never finished. Channel analysis,
# the verdict's origin and ncclras's reading all order by it.
CAUSE_ORDER = (*MISMATCHES, Cause.DEAD, Cause.NOT_ENTERED, Cause.NOT_COMPLETED)
