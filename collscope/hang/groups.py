"""The process groups of a set of dumps and their channels (pure).

A group's members come from ``pg_config`` where the dump lists them (NCCL: every group, the
default one with the description ``default_pg``); otherwise from the ranks whose entries name
the group (gloo's groups), which is said in the output (``members_inferred``): a member that
left no entry is then unknown.

gloo lists no group by name: every gloo group torch makes records its ranks under one key
``''`` (name and description still empty when ProcessGroupGloo's constructor records them), so
the entry holds the group made last on that rank, in that torch's numbering: the world on a
job without sub-groups, ``[]`` on torch 2.13 and the group-local ``[0, 1]`` on torch 2.15 after
a 2-rank ``new_group``. It is taken for the world only where it holds every rank dumped.

A channel is what is matched across members: a group's collectives (by
``collective_seq_id``), or one pair's point-to-point ops (by ``p2p_seq_id`` and peer).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from collscope.errors import UsageError
from collscope.hang.model import Entry, GroupKey, GroupStatus, RankDump


@dataclass
class Group:
    key: GroupKey
    desc: str
    members_inferred: bool

    @property
    def label(self) -> str:
        desc = f" ({self.desc})" if self.desc and self.desc not in ("undefined", "") else ""
        return f'"{self.key.name}"{desc}'


@dataclass
class Lane:
    """One rank's side of a channel: its entries by sequence number, the last number it
    issued and the last it completed (None: unknown)."""

    entries: dict[int, Entry] = field(default_factory=dict)
    issued: int | None = None
    done: int | None = None


@dataclass
class Channel:
    group: Group
    kind: str                      # "collectives" or "p2p"
    members: tuple[int, ...]       # global ranks matched on this channel
    lanes: dict[int, Lane]         # by global rank, dumps present only

    @property
    def label(self) -> str:
        if self.kind == "p2p":
            a, b = self.members
            return f"{self.group.label} p2p {a}<->{b}"
        return self.group.label


def _default_ranks(dump: RankDump, dumped: set[int]) -> tuple[int, ...] | None:
    """The default group's members as ``dump`` lists them: NCCL's ``default_pg`` entry, or
    gloo's ``''`` entry where it holds every rank in ``dumped`` (else it is a sub-group's)."""
    for name, ranks in dump.groups.items():
        if ranks and dump.group_descs.get(name) == "default_pg":
            return ranks
    gloo = dump.groups.get("")
    return gloo if gloo and dumped <= set(gloo) else None


def listed_world(dumps: list[RankDump], extra: Iterable[int] = ()) -> dict[tuple[int, ...], str]:
    """Each default-group membership the dumps list, with the first dump that lists it."""
    dumped = {d.rank for d in dumps} | set(extra)
    seen: dict[tuple[int, ...], str] = {}
    known: set[int] = set()      # ids of the lists met: hashing 16 384 ranks per dump is slow
    for dump in dumps:
        ranks = _default_ranks(dump, dumped)
        if ranks and id(ranks) not in known:
            known.add(id(ranks))
            seen.setdefault(ranks, dump.path)
    return seen


def world_ranks(dumps: list[RankDump], extra: set[int]) -> tuple[int, ...]:
    """The job's ranks: the default group's members (every dump must agree), else 0..max."""
    seen = listed_world(dumps, extra)
    if len(seen) > 1:
        (a, pa), (b, pb) = list(seen.items())[:2]
        raise UsageError(f"{pb}: dumps of two different jobs mixed: its world has {len(b)} "
                         f"ranks, {pa}'s has {len(a)}; give one job's dumps")
    if seen:
        world = next(iter(seen))
        members = set(world)
        outside = sorted(d.rank for d in dumps if d.rank not in members)
        if outside:
            raise UsageError(f"dumps of two different jobs mixed: rank {outside[0]} is not in "
                             f"the {len(world)}-rank world the others name; give one job's dumps")
        return world
    top = max([d.rank for d in dumps] + list(extra) + [r for d in dumps
                                                          for rs in d.groups.values()
                                                          for r in rs])
    return tuple(range(top + 1))


def build_groups(dumps: list[RankDump]) -> dict[str, Group]:
    """Groups by name; UsageError when two dumps list different members for one name with no
    way to tell them apart (two jobs mixed)."""
    listed: dict[str, tuple[tuple[int, ...], str, str]] = {}
    sets: dict[int, frozenset[int]] = {}      # by id: a large job's dumps share one tuple

    def has(ranks: tuple[int, ...], rank: int) -> bool:
        members = sets.get(id(ranks))
        if members is None:
            members = sets[id(ranks)] = frozenset(ranks)
        return rank in members

    for dump in dumps:
        for name, ranks in dump.groups.items():
            if not ranks or name == "":
                continue
            previous = listed.get(name)
            if previous and previous[0] is not ranks and previous[0] != ranks \
                    and has(previous[0], dump.rank):
                raise UsageError(f"{dump.path}: dumps of two different jobs mixed: group "
                                 f"\"{name}\" has ranks {list(ranks)} here and "
                                 f"{list(previous[0])} in {previous[2]}")
            if not previous or has(ranks, dump.rank):
                listed[name] = (ranks, dump.group_descs.get(name, ""), dump.path)
    named_by_entries: dict[str, set[int]] = defaultdict(set)
    descs: dict[str, str] = {}
    for dump in dumps:
        for entry in dump.entries:
            named_by_entries[entry.group_name].add(dump.rank)
            descs.setdefault(entry.group_name, entry.group_desc)
    groups: dict[str, Group] = {}
    for name, (ranks, desc, _) in listed.items():
        groups[name] = Group(GroupKey(name, ranks), desc or descs.get(name, ""), False)
    for name, seen in named_by_entries.items():
        if name in groups:
            continue
        desc = descs.get(name, "")
        default = next(iter(listed_world(dumps)), None) if desc == "default_pg" else None
        members = default or tuple(sorted(seen))
        groups[name] = Group(GroupKey(name, members), desc, default is None)
    return groups


def _status_kind(dump: RankDump, group: str) -> tuple[str, int | None, int | None]:
    """(kind of the group's last work on this rank, p2p peer if all its p2p ops there share
    one, pg_id): pg_status counts in that kind."""
    mine = [e for e in dump.entries if e.group_name == group]
    if not mine:
        return "", None, None
    last = mine[-1]
    peers = {e.peer_local for e in mine if e.is_p2p}
    return ("p2p" if last.is_p2p else "collectives",
            peers.pop() if len(peers) == 1 else None, last.pg_id)


def build_channels(dumps: list[RankDump], groups: dict[str, Group]) -> list[Channel]:
    by_rank = {d.rank: d for d in dumps}
    channels: list[Channel] = []
    for name, group in groups.items():
        coll: dict[int, Lane] = {}
        pairs: dict[tuple[int, int], dict[int, Lane]] = defaultdict(dict)
        for rank in group.key.ranks:
            dump = by_rank.get(rank)
            if dump is None:
                continue
            kind, peer, pg_id = _status_kind(dump, name)
            status = dump.status.get(pg_id) if pg_id is not None else None
            lane = coll.setdefault(rank, Lane())
            for entry in (e for e in dump.entries if e.group_name == name):
                if entry.is_p2p:
                    other = group.key.local_to_global(entry.peer_local or 0)
                    if other is None:
                        continue
                    pair = (min(rank, other), max(rank, other))
                    p2p = pairs[pair].setdefault(rank, Lane())
                    _add(p2p, entry.p2p_seq, entry)
                else:
                    _add(lane, entry.seq, entry)
            if status is not None and kind == "collectives":
                _status(lane, status, False)
            elif status is not None and kind == "p2p" and peer is not None:
                other = group.key.local_to_global(peer)
                side = pairs.get((min(rank, other), max(rank, other))) \
                    if other is not None else None
                if side is not None and rank in side:
                    _status(side[rank], status, True)
        if any(lane.entries for lane in coll.values()):
            channels.append(Channel(group, "collectives", group.key.ranks, coll))
        for pair, lanes in sorted(pairs.items()):
            channels.append(Channel(group, "p2p", pair, lanes))
    return channels


def _add(lane: Lane, seq: int, entry: Entry) -> None:
    lane.entries[seq] = entry
    lane.issued = seq if lane.issued is None else max(lane.issued, seq)
    if entry.done:
        lane.done = seq if lane.done is None else max(lane.done, seq)


def _status(lane: Lane, status: GroupStatus, p2p: bool) -> None:
    """pg_status in the lane's numbers. NCCL counts in collective_seq_id or p2p_seq_id (the
    kind of the group's last work), gloo in op_id (every op, p2p included): the counter is the
    one the lane's last entry carries, and op_ids are turned into the entries' numbers."""
    if not lane.entries:
        return
    last = lane.entries[max(lane.entries)]
    number = last.p2p_seq if p2p else last.seq
    if status.enqueued == number:
        enqueued, completed = status.enqueued, status.completed
    elif status.enqueued == last.op_id:
        by_op = {e.op_id: s for s, e in lane.entries.items()}
        enqueued = number
        completed = by_op.get(status.completed, -1)
    else:
        return
    if enqueued >= 0:
        lane.issued = enqueued if lane.issued is None else max(lane.issued, enqueued)
    if completed >= 0:
        lane.done = completed if lane.done is None else max(lane.done, completed)
