"""What `collscope hang` records and prints: hang_group / hang_verdict records and the text
(verdict first, then the evidence)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from collscope.hang.analysis import ChannelFinding
from collscope.hang.verdict import ranks_text
from collscope.records.hang import (
    HangChannelRecord,
    HangGroupRecord,
    HangMemberRecord,
    HangVerdictRecord,
)

if TYPE_CHECKING:
    from collscope.hang.outcome import HangAnalysis

_WORST = ("op_mismatch", "size_mismatch", "dtype_mismatch", "dead_or_unresponsive",
          "not_entered", "not_completed", "none")


def _channel_record(finding: ChannelFinding, hosts: dict[int, str]) -> HangChannelRecord:
    channel = finding.channel
    members = []
    for rank in channel.members:
        member = finding.members.get(rank)
        lane = channel.lanes.get(rank)
        entry = (member.entry or member.last) if member else None
        frame = entry.user_frame() if entry else None
        members.append(HangMemberRecord(
            rank=rank, did=member.did if member else "idle", host=hosts.get(rank),
            issued=lane.issued if lane else None, completed=lane.done if lane else None,
            op=entry.op if entry else None,
            at=f"{frame.filename}:{frame.line}" if frame else None))
    name = "collectives" if channel.kind == "collectives" else \
        f"p2p {channel.members[0]}<->{channel.members[1]}"
    return HangChannelRecord(name, finding.stuck, finding.seq, finding.op, finding.cause.value,
                             finding.culprits, finding.waiting, members, finding.note)


def group_records(analysis: HangAnalysis) -> list[dict[str, Any]]:
    hosts = analysis.verdict.hosts
    records = []
    for name, group in analysis.groups.items():
        channels = [_channel_record(f, hosts) for f in analysis.findings
                    if f.channel.group is group]
        if not channels:
            continue
        worst = min(channels, key=lambda c: _WORST.index(c.cause))
        records.append(HangGroupRecord(
            group=name, desc=group.desc, ranks=list(group.key.ranks),
            members_inferred=group.members_inferred, stuck=any(c.stuck for c in channels),
            cause=worst.cause, culprit_ranks=sorted({r for c in channels
                                                     for r in c.culprit_ranks}),
            channels=channels).to_dict())
    return records


def communicator_record(name: str, size: int | None, cause: str,
                        culprits: list[int]) -> dict[str, Any]:
    """An ncclras communicator as a hang_group record (it has no channels: RAS counts
    operations per rank, it lists no entries)."""
    return HangGroupRecord(group=name, desc="ncclras communicator",
                           ranks=list(range(size)) if size else [], members_inferred=False,
                           stuck=cause != "none", cause=cause, culprit_ranks=culprits,
                           channels=[], source="ncclras").to_dict()


def analysis_records(analysis: HangAnalysis) -> list[dict[str, Any]]:
    """One hang_group per process group (or ncclras communicator), then exactly one
    hang_verdict."""
    return [*analysis.group_records, verdict_record(analysis)]


def verdict_record(analysis: HangAnalysis) -> dict[str, Any]:
    from collscope.hang.outcome import METHOD

    v = analysis.verdict
    return HangVerdictRecord(
        culprit_ranks=v.culprit_ranks, waiting_ranks=v.waiting_ranks, cause=v.cause.value,
        group=v.group, collective=v.collective, seq=v.seq,
        hosts={str(r): h for r, h in v.hosts.items()}, headline=v.headline,
        origins=[{**asdict(o), "cause": o.cause.value} for o in v.origins],
        missing_ranks=sorted(analysis.missing), notes=analysis.notes,
        next_steps=list(v.next_steps),
        method=METHOD if analysis.source == "flight_recorder" else
        "ncclras: per communicator, ranks with fewer launched operations than the others "
        "lag (the culprits); missing, dead and unresponsive ranks").to_dict()


def _frames_text(entry: Any) -> list[str]:
    return [f"      {f.filename}:{f.line} in {f.name}" for f in entry.frames]


def render_text(analysis: HangAnalysis) -> str:
    """The verdict first, then per stuck group a table of its members, the stacks of the
    culprits' last call and of a waiting rank's pending one, notes and the next step."""
    v = analysis.verdict
    lines = [v.headline, ""]
    hosts = v.hosts
    culprits = set(v.culprit_ranks)
    stuck = [(record, channel) for record in analysis.group_records
             for channel in record["channels"] if channel["stuck"]]
    origin = [(r, c) for r, c in stuck if set(c["culprit_ranks"]) & culprits]
    # The groups the verdict names first, then the other groups where the culprits lag.
    named = {(o.group_name, o.seq) for o in v.origins}
    origin.sort(key=lambda rc: (rc[0]["group"], rc[1]["seq"]) not in named)
    for record, channel in origin:
        lines.append(f"{_label(record, channel)}, ranks {ranks_text(record['ranks'])}: stuck "
                     f"at #{channel['seq']} {channel['op'] or ''} -> {channel['cause']}"
                     + (f" ({channel['note']})" if channel["note"] else ""))
        lines.append(f"  {'rank':>5}  {'host':<14} {'did':<21} {'issued':>8} "
                     f"{'completed':>9}  op / where")
        for m in channel["members"]:
            lines.append(f"  {m['rank']:>5}  {(m['host'] or '-'):<14} {m['did']:<21} "
                         f"{_n(m['issued']):>8} {_n(m['completed']):>9}  "
                         f"{m['op'] or '-'}{' at ' + m['at'] if m['at'] else ''}")
        lines.append("")
    others = [(r, c) for r, c in stuck if (r, c) not in origin]
    if others:
        lines.append(f"{len(others)} other stuck group(s), waiting on the above:")
        for record, channel in others:
            why = channel["note"] or (f"{channel['cause']}: ranks "
                                      f"{ranks_text(channel['culprit_ranks'])}")
            waiting = channel["waiting_ranks"]
            who = f"rank {waiting[0]} waits" if len(waiting) == 1 else \
                f"ranks {ranks_text(waiting)} wait"
            lines.append(f"  {_label(record, channel)}: #{channel['seq']} {channel['op'] or ''}"
                         f", {who} ({why})")
        lines.append("")
    lines += _stacks(analysis)
    if analysis.missing:
        lines.append("no dump: " + "; ".join(
            f"rank {r}{' (' + hosts[r] + ')' if r in hosts else ''}: {why}"
            for r, why in analysis.missing.items()))
    lines += [f"note: {n}" for n in analysis.notes]
    lines += [f"next: {step}" for step in v.next_steps]
    return "\n".join(lines).rstrip() + "\n"


def _label(record: dict[str, Any], channel: dict[str, Any]) -> str:
    desc = record["desc"] if record["desc"] not in ("", "undefined") else ""
    label = f'group "{record["group"]}"' + (f" ({desc})" if desc else "")
    return label + ("" if channel["channel"] == "collectives" else f" {channel['channel']}")


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def _stacks(analysis: HangAnalysis) -> list[str]:
    lines: list[str] = []
    v = analysis.verdict
    culprits = set(v.culprit_ranks)
    for finding in analysis.findings:
        if not set(finding.culprits) & culprits:
            continue
        for rank in finding.culprits:
            member = finding.members[rank]
            entry = member.entry or member.last
            if entry is not None and entry.frames:
                lines.append(f"stack of rank {rank}'s {'call' if member.entry else 'last call'}"
                             f" ({entry.op}):")
                lines += _frames_text(entry)
        waiter = next((m for m in (finding.members[r] for r in finding.waiting)
                       if m.entry is not None and m.entry.frames), None)
        if waiter is not None and waiter.entry is not None:
            lines.append(f"stack of waiting rank {waiter.rank}'s pending {waiter.entry.op}:")
            lines += _frames_text(waiter.entry)
        if lines:
            lines.append("")
            break
    for origin in v.origins:
        if origin.where:
            lines.append(f"rank {origin.rank}'s main thread at dump time: {origin.where}")
    return lines


def write_json_records(target: str, analysis: HangAnalysis, argv: Any) -> None:
    """The run record, then the hang_group records and the hang_verdict, to ``target``."""
    from collscope.records.jsonl import write_records
    from collscope.records.run import RunRecord

    dumps = analysis.dumps
    hosts = sorted(set(analysis.verdict.hosts.values()))
    run = RunRecord.create(
        "hang", argv=["collscope", *argv], launcher="hang",
        backend=next((d.backend for d in dumps if d.backend), analysis.source),
        world_size=len(analysis.world), nodes=len(hosts), ranks_per_node=0, hosts=hosts,
        devices=[{"rank": d.rank, "path": d.path, "format": d.fmt, "version": d.version}
                 for d in dumps], versions={"flight_recorder": ", ".join(sorted(
                     {d.version for d in dumps})) or None}, env={},
        timing="none: a hang analysis reads dumps, it measures nothing",
        extra={"source": analysis.source}).to_dict()
    write_records(target, [run, *analysis_records(analysis)])
