"""One job's dumps, analysed: the groups, each channel's finding, the cascade and the verdict
(pure once the files are read)."""

from __future__ import annotations

from collections.abc import Mapping

from collscope.errors import UsageError
from collscope.hang.analysis import ChannelFinding, analyse_channel
from collscope.hang.cascade import origins
from collscope.hang.groups import Group, build_channels, build_groups, world_ranks
from collscope.hang.model import RankDump
from collscope.hang.names import hosts_from_names
from collscope.hang.outcome import HangAnalysis
from collscope.hang.reading import Inputs, read_whole
from collscope.hang.report import group_records
from collscope.hang.verdict import judge


def _one_per_rank(dumps: list[RankDump]) -> list[RankDump]:
    """A rank dumped twice (pickle and JSON of one moment) is kept once, frames preferred;
    two different dumps of one rank are two jobs mixed (compared whole, never reduced)."""
    kept: dict[int, RankDump] = {}
    for dump in dumps:
        other = kept.get(dump.rank)
        if other is None:
            kept[dump.rank] = dump
            continue
        if other.dropped:
            other = kept[dump.rank] = read_whole(other)
        if dump.dropped:
            dump = read_whole(dump)
        same = [(e.record_id, e.group_name, e.seq, e.op) for e in other.entries] == \
            [(e.record_id, e.group_name, e.seq, e.op) for e in dump.entries]
        if not same:
            raise UsageError(f"{dump.path}: dumps of two different jobs mixed (or two dumps "
                             f"of one rank from different moments): rank {dump.rank} is also "
                             f"{other.path}; give one dump per rank")
        if any(e.raw_frames for e in dump.entries) and \
                not any(e.raw_frames for e in other.entries):
            kept[dump.rank] = dump
    return [kept[r] for r in sorted(kept)]


def _hosts(inputs: Inputs, dumps: list[RankDump], given: Mapping[int, str] | None,
           ) -> dict[int, str]:
    hosts: dict[int, str] = {}
    by_name = hosts_from_names([d.path for d in dumps])
    for dump in dumps:
        host = dump.host or by_name.get(dump.path)
        if host:
            hosts[dump.rank] = host
    for rank, stack in inputs.stacks.items():
        if stack.host:
            hosts.setdefault(rank, stack.host)
    hosts.update({int(r): str(h) for r, h in (given or {}).items()})
    return dict(sorted(hosts.items()))


def _matched(dumps: list[RankDump], missing: dict[int, str],
             ) -> tuple[dict[str, Group], list[ChannelFinding]]:
    groups = build_groups(dumps)
    channels = build_channels(dumps, groups)
    first_pending = {d.rank: min((e.record_id for e in d.entries if not e.done),
                                 default=1 << 62) for d in dumps}
    return groups, [analyse_channel(c, missing, first_pending) for c in channels]


def _needing_whole(findings: list[ChannelFinding], by_rank: dict[int, RankDump]) -> set[int]:
    """Ranks whose reduced dump left out the entry at a stuck number that their full dump has
    (a rank ahead of another by more than reduce.WINDOW): they are read again whole."""
    ranks = set()
    for finding in findings:
        if not finding.stuck or finding.seq is None:
            continue
        group, channel = finding.channel.group, finding.channel
        for rank, lane in channel.lanes.items():
            dropped = by_rank[rank].dropped
            if not dropped or finding.seq in lane.entries:
                continue
            lanes: list[tuple[str, int | None]] = [(group.key.name, None)]
            if channel.kind != "collectives":
                other = channel.members[1] if rank == channel.members[0] else channel.members[0]
                lanes = [key for key in dropped if key[0] == group.key.name and
                         key[1] is not None and group.key.local_to_global(key[1]) == other]
            if any(low <= finding.seq <= high for key in lanes
                   for low, high in dropped.get(key, ())):
                ranks.add(rank)
    return ranks


def analyse_dumps(inputs: Inputs, given_hosts: Mapping[int, str] | None) -> HangAnalysis:
    dumps = _one_per_rank(inputs.dumps)
    versions = sorted({d.version for d in dumps})
    silent = {r for na in inputs.no_answer for r in na.ranks}
    world = world_ranks(dumps, silent | set(inputs.stacks))
    hosts = _hosts(inputs, dumps, given_hosts)
    present = {d.rank for d in dumps}
    missing = {r: "no dump" for r in world if r not in present}
    for answer in inputs.no_answer:
        for rank in answer.ranks:
            missing[rank] = f"did not answer the dump request: {answer.why}" if answer.why \
                else "did not answer the dump request"
    groups, findings = _matched(dumps, missing)
    if any(d.dropped for d in dumps) and any(len(set(g.key.ranks)) < len(g.key.ranks)
                                             for g in groups.values()):
        # A group listing one rank twice joins two of a rank's p2p lanes: read whole.
        dumps = [read_whole(d) if d.dropped else d for d in dumps]
        groups, findings = _matched(dumps, missing)
    again = _needing_whole(findings, {d.rank: d for d in dumps})
    if again:
        dumps = [read_whole(d) if d.rank in again else d for d in dumps]
        groups, findings = _matched(dumps, missing)
    edges = [edge for f in findings for edge in f.edges]
    culprits = {r for f in findings for r in f.culprits}
    roots, waiting = origins(edges, culprits)
    verdict = judge(findings, roots, waiting, hosts, inputs.stacks)
    notes = []
    if len(versions) > 1:
        notes.append(f"dumps of different Flight Recorder versions: {', '.join(versions)}")
    if missing:
        notes.append(f"no dump of ranks {', '.join(map(str, sorted(missing)))} "
                     f"(of {len(world)}); the others are analysed")
    for text in sorted({f"version {d.version} ({d.backend or 'unknown backend'}): "
                        + "; ".join(d.missing_fields) for d in dumps if d.missing_fields}):
        notes.append(text)
    inferred = sorted(g.key.name for g in groups.values() if g.members_inferred)
    if inferred:
        notes.append("members of groups " + ", ".join(f'"{n}"' for n in inferred)
                     + " known only from their entries (gloo lists no sub-group members)")
    notes += [f"skipped {s}" for s in inputs.skipped]
    analysis = HangAnalysis(verdict, dumps, world, groups, findings, missing, notes)
    analysis.group_records = group_records(analysis)
    return analysis
