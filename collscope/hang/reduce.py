"""One rank's dump reduced to the entries the analysis can read (pure), so that a job of
16 384 ranks x 2 000 entries is not held whole: every fact the matching takes from a rank's
entries stays exactly as it was (the verdict is byte-identical, tests/unit/hang), from a few
entries per lane instead of all of them.

A lane is one rank's side of a channel (groups.py): a group's collectives, or its p2p ops with
one peer, numbered by collective_seq_id / p2p_seq_id. What is read of a lane: its lowest and
highest number, the highest completed, pg_status turned into its numbers (the entries whose
op_id it names), the first pending number above what completed, and the entry at the group's
stuck number, which is not known before every rank is read: it is the lowest "completed + 1"
over the members, so the entries at the lane's own completed - WINDOW + 2 ... completed + 1
are kept; a stuck number below that (a rank far ahead of another) is found in ``dropped``
and the rank read again whole (job.py). Across a rank's lanes: each group's first entry (the
order groups are listed in) and last (whose pg_id names its pg_status), one entry per p2p
peer, and the oldest pending entry (a rank blocked elsewhere first).

Where a dump is not shaped as the facts above assume (entries out of record_id order, one
number twice in a lane, a field of another type) nothing is dropped: it is read whole."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter, lt
from types import SimpleNamespace
from typing import cast

from collscope.hang.groups import Lane
from collscope.hang.groups import _status as lane_status
from collscope.hang.model import Entry, GroupStatus

WINDOW = 3              # numbers kept at and below each lane's last completed one

LaneKey = tuple[str, "int | None"]          # (group name, p2p peer in group-local ranks)


@dataclass
class EntryColumns:
    """Every entry of one dump, a list per field (dumps.entry_columns), in file order."""

    record_ids: list[int]
    group_names: list[str]
    peers: list[int | None]      # p2p: the peer (group-local); collectives: None
    numbers: list[int]           # collective_seq_id, or p2p_seq_id for p2p ops
    done: list[bool]
    op_ids: list[int]
    pg_id_at: Callable[[int], int]   # an entry's pg_id, read as the whole dump reads it
    backend: str                 # of the first entry that names one


@dataclass
class Kept:
    positions: list[int]                                   # into the dump's entries, sorted
    dropped: dict[LaneKey, list[tuple[int, int]]] = field(default_factory=dict)


def kept_entries(c: EntryColumns, status: dict[int, GroupStatus]) -> Kept | None:
    """The entries to keep and, per lane, the runs of numbers left out; None: keep them all."""
    ids = c.record_ids
    if not all(map(lt, ids, ids[1:])):
        return None
    lanes = _lanes(c)
    across = _across_lanes(c, lanes)
    statuses = _lane_statuses(c, lanes, status)
    kept: dict[LaneKey, set[int]] = {}
    for key, positions in lanes.items():
        local = _kept_in_lane(positions, c, statuses.get(key), key[1] is not None)
        if local is None:
            return None
        kept[key] = local
    for position in across:
        key = (c.group_names[position], c.peers[position])
        kept[key].add(bisect_left(lanes[key], position))
    result = Kept(sorted(lanes[key][j] for key, local in kept.items() for j in local))
    for key, local in kept.items():
        runs = _left_out(lanes[key], sorted(local), c.numbers)
        if runs:
            result.dropped[key] = runs
    return result


def _lanes(c: EntryColumns) -> dict[LaneKey, list[int]]:
    """Each lane's positions in the dump, ascending (one lane, the common dump: at C speed)."""
    if c.peers.count(None) == len(c.peers) and len(set(c.group_names)) == 1:
        return {(c.group_names[0], None): list(range(len(c.group_names)))}
    lanes: dict[LaneKey, list[int]] = {}
    for position, key in enumerate(zip(c.group_names, c.peers)):
        lanes.setdefault(key, []).append(position)
    return lanes


def _across_lanes(c: EntryColumns, lanes: dict[LaneKey, list[int]]) -> set[int]:
    """Each group's first and last entry, one per p2p peer (a lane's first: kept anyway) and
    the oldest pending entry (record_ids ascend, so it is the first not done)."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for (group, _), positions in lanes.items():
        first[group] = min(first.get(group, positions[0]), positions[0])
        last[group] = max(last.get(group, positions[-1]), positions[-1])
    wanted = set(first.values()) | set(last.values())
    if False in c.done:
        wanted.add(c.done.index(False))
    return wanted


def _lane_statuses(c: EntryColumns, lanes: dict[LaneKey, list[int]],
                   status: dict[int, GroupStatus]) -> dict[LaneKey, GroupStatus]:
    """The lane each group's pg_status counts in (groups._status_kind): the kind of the
    group's last entry, and for p2p the one peer all its p2p ops share."""
    last: dict[str, int] = {}
    peers: dict[str, set[int]] = {}
    for (group, peer), positions in lanes.items():
        last[group] = max(last.get(group, positions[-1]), positions[-1])
        if peer is not None:
            peers.setdefault(group, set()).add(peer)
    found: dict[LaneKey, GroupStatus] = {}
    for group, position in last.items():
        counted = status.get(c.pg_id_at(position))
        if counted is None:
            continue
        if c.peers[position] is None:
            found[(group, None)] = counted
        elif len(peers[group]) == 1:
            found[(group, next(iter(peers[group])))] = counted
    return found


def _kept_in_lane(positions: list[int], c: EntryColumns, status: GroupStatus | None,
                  p2p: bool) -> set[int] | None:
    """Lane-local indices to keep; None where a number repeats or falls (read whole)."""
    numbers, done, op_ids = (_picked(column, positions)
                             for column in (c.numbers, c.done, c.op_ids))
    if not all(map(lt, numbers, numbers[1:])):
        return None
    lane = Lane(issued=numbers[-1])
    keep = {0, len(numbers) - 1}
    if True in done:
        last_done = len(done) - 1 - done[::-1].index(True)
        lane.done = numbers[last_done]
        keep.add(last_done)
    if status is not None:
        # pg_status in the lane's numbers, by the same code as the channels (groups.py): it
        # reads the last entry and the entries whose op_id is the completed count.
        named = _indices(op_ids, status.completed)
        keep.update(named)
        read = {numbers[j]: SimpleNamespace(seq=numbers[j], p2p_seq=numbers[j],
                                            op_id=op_ids[j])
                for j in sorted({len(numbers) - 1, *named})}
        lane.entries = cast("dict[int, Entry]", read)    # the three fields _status reads
        lane_status(lane, status, p2p)
    completed = lane.done if lane.done is not None else numbers[0] - 1
    above = bisect_right(numbers, completed)
    if False in done[above:]:
        keep.add(done.index(False, above))
    keep.update(range(bisect_left(numbers, completed - WINDOW + 2),
                      bisect_right(numbers, completed + 1)))
    return keep


def _picked(column: list, positions: list[int]) -> list:
    """The lane's values of a column (C-speed: the whole column when the lane is the dump)."""
    if len(positions) == len(column):
        return column
    return [column[positions[0]]] if len(positions) == 1 else list(itemgetter(*positions)(column))


def _indices(values: list[int], wanted: int) -> list[int]:
    found: list[int] = []
    for _ in range(values.count(wanted)):
        found.append(values.index(wanted, found[-1] + 1 if found else 0))
    return found


def _left_out(positions: list[int], kept: list[int], numbers: list[int]) -> list[tuple[int, int]]:
    """The runs (lowest, highest number) of the lane's entries between the kept ones."""
    runs = []
    previous = -1
    for j in [*kept, len(positions)]:
        if j > previous + 1:
            runs.append((numbers[positions[previous + 1]], numbers[positions[j - 1]]))
        previous = j
    return runs
