"""Per channel: the first sequence number not completed on every member, and what each member
did there (pure). See docs/hang.md, "Method"."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from collscope.hang.groups import Channel, Lane
from collscope.hang.model import AHEAD, CAUSE_ORDER, MISMATCHES, WAITING, Cause, Entry


@dataclass
class Member:
    rank: int
    did: str                     # a Cause value, WAITING or AHEAD
    entry: Entry | None          # its entry at the stuck number
    last: Entry | None           # its last entry on the channel
    first_pending: int | None    # its first issued-but-not-completed number on the channel
    detail: str = ""


@dataclass
class ChannelFinding:
    channel: Channel
    stuck: bool
    seq: int | None = None                 # first number not completed on every member
    op: str | None = None                  # what the members that issued it called
    members: dict[int, Member] = field(default_factory=dict)
    culprits: list[int] = field(default_factory=list)
    cause: Cause = Cause.NONE
    edges: list[tuple[int, int]] = field(default_factory=list)   # (waiting rank, on rank)
    note: str = ""

    @property
    def waiting(self) -> list[int]:
        return sorted(r for r, m in self.members.items()
                      if r not in self.culprits and m.first_pending is not None)


def _done(lane: Lane) -> int:
    if lane.done is not None:
        return lane.done
    # Nothing completed in its buffer: what came before its oldest entry was (ring buffers
    # drop the oldest; NCCL's only-active dumps hold only what is pending).
    return min(lane.entries) - 1 if lane.entries else -1


def _first_pending(lane: Lane) -> int | None:
    done = _done(lane)
    pending = [s for s in lane.entries if s > done and not lane.entries[s].done]
    if pending:
        return min(pending)
    return done + 1 if lane.issued is not None and lane.issued > done else None


def _signature(entry: Entry, kind: str) -> tuple[str, str, str]:
    op = "p2p" if kind == "p2p" else entry.op
    return op, repr(entry.input_sizes), ",".join(map(str, entry.input_dtypes))


def _mismatch(entry: Entry, reference: tuple[str, str, str], kind: str) -> Cause | None:
    op, sizes, dtypes = _signature(entry, kind)
    if op != reference[0]:
        return Cause.OP_MISMATCH
    if sizes != reference[1]:
        return Cause.SIZE_MISMATCH
    if dtypes != reference[2]:
        return Cause.DTYPE_MISMATCH
    return None


def _p2p_pair_mismatch(entries: dict[int, Entry], kind: str) -> Cause | None:
    """Both sides of a pair at one number: one sends, the other receives, the same sizes."""
    if kind != "p2p" or len(entries) != 2:
        return None
    a, b = entries.values()
    if {a.op, b.op} != {"send", "recv"}:
        return Cause.OP_MISMATCH
    if repr(a.input_sizes) != repr(b.input_sizes):
        return Cause.SIZE_MISMATCH
    return None


def analyse_channel(channel: Channel, dead: dict[int, str],
                    first_pending_record: dict[int, int]) -> ChannelFinding:
    """``dead``: rank -> why it left no dump; ``first_pending_record``: each rank's oldest
    pending entry (record_id) over all groups, to tell a member blocked elsewhere first."""
    lanes = channel.lanes
    present = [r for r in channel.members if r in lanes]
    if not any(_first_pending(lanes[r]) is not None for r in present):
        return ChannelFinding(channel, stuck=False)
    known = [r for r in present if lanes[r].entries or lanes[r].issued is not None]
    seq = min(_done(lanes[r]) for r in known) + 1
    at_seq = {r: lanes[r].entries[seq] for r in present if seq in lanes[r].entries}
    votes = Counter(_signature(e, channel.kind) for e in at_seq.values())
    reference = max(votes.items(), key=lambda kv: (kv[1], -min(
        r for r, e in at_seq.items() if _signature(e, channel.kind) == kv[0])))[0] \
        if votes else None
    anyone_done = any(_done(lanes[r]) >= seq for r in present)
    finding = ChannelFinding(channel, stuck=True, seq=seq,
                             op=next((e.op for e in at_seq.values()
                                      if reference and _signature(e, channel.kind)
                                      == reference), None))
    pair_cause = _p2p_pair_mismatch(at_seq, channel.kind)
    for rank in channel.members:
        lane = lanes.get(rank)
        if lane is None:
            finding.members[rank] = Member(rank, Cause.DEAD.value, None, None, None,
                                           dead.get(rank, "no dump"))
            continue
        last = lane.entries[max(lane.entries)] if lane.entries else None
        member = Member(rank, WAITING, at_seq.get(rank), last, _first_pending(lane))
        issued = lane.issued if lane.issued is not None else -1
        if rank in dead:
            member.did, member.detail = Cause.DEAD.value, dead[rank]
        elif rank in at_seq and channel.kind == "collectives" and reference and (
                wrong := _mismatch(at_seq[rank], reference, channel.kind)) and len(votes) > 1:
            # Also when gloo marked it completed: a peer's error ends a mismatched call too.
            member.did = wrong.value
        elif _done(lane) >= seq:
            member.did = AHEAD
        elif issued < seq:
            member.did = Cause.NOT_ENTERED.value
        elif pair_cause is not None:
            member.did = pair_cause.value
        elif anyone_done:
            member.did = Cause.NOT_COMPLETED.value
            member.detail = "its peers completed it"
        finding.members[rank] = member
    _blame(finding, dead, first_pending_record)
    return finding


def _blame(finding: ChannelFinding, dead: dict[int, str],
           first_pending_record: dict[int, int]) -> None:
    members = finding.members
    for cause in CAUSE_ORDER:   # a channel's culprits, by what they did
        ranks = sorted(r for r, m in members.items() if m.did == cause.value)
        if ranks and (cause not in MISMATCHES or len(ranks) < len(members)):
            finding.culprits, finding.cause = ranks, cause
            break
    for rank, member in members.items():
        if rank not in finding.culprits and member.did == Cause.NOT_COMPLETED.value:
            member.did, member.detail = WAITING, ""      # it waits on the culprits
    pending = [r for r, m in members.items() if m.first_pending is not None]
    if finding.culprits:
        finding.edges = [(r, c) for r in pending for c in finding.culprits if r != c]
        return
    # Every member issued it and none completed it. A member whose entry there is not its
    # oldest pending one is held up elsewhere first (its stream or thread runs in order).
    blocked = [r for r, m in members.items() if m.entry is not None
               and first_pending_record.get(r, m.entry.record_id) < m.entry.record_id]
    if blocked:
        finding.edges = [(r, b) for r in pending for b in blocked if r != b]
        finding.note = "held up elsewhere first: " + ", ".join(map(str, sorted(blocked)))
        return
    unseen = sorted(set(dead) - set(members))
    if finding.channel.group.members_inferred and unseen:
        # gloo lists no members of its sub-groups: a rank without a dump may be one.
        finding.edges = [(r, d) for r in pending for d in unseen]
        finding.note = ("members known only from the entries (gloo lists none): ranks "
                        f"{', '.join(map(str, unseen))} left no dump and may belong here")
        return
    finding.culprits, finding.cause = sorted(members), Cause.NOT_COMPLETED
    for stuck in members.values():
        stuck.did = Cause.NOT_COMPLETED.value
        stuck.detail = "every member issued it, none completed it"
    finding.edges = [(a, b) for a in members for b in members if a != b]
