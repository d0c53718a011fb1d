"""The verdict: which ranks hold the job, why, where, and the one line that says it (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from collscope.hang.analysis import ChannelFinding
from collscope.hang.model import (
    CAUSE_ORDER,
    MISMATCHES,
    Cause,
    Entry,
    StackDump,
    innermost_user_frame,
)


@dataclass(frozen=True)
class Origin:
    """One rank at the origin of the hang and the evidence that names it."""

    rank: int
    cause: Cause
    group: str                  # the group's label, e.g. '"37" (TENSOR_MODEL_PARALLEL_GROUP)'
    group_name: str             # its name, e.g. "37"
    group_ranks: tuple[int, ...]
    op: str | None
    seq: int | None
    sentence: str               # what it did, e.g. 'never entered all_reduce #9 of group ...'
    last: str | None = None     # its last entry there: "all_reduce #8 at train.py:62 in steps"
    where: str | None = None    # its main thread at dump time (stack files)


@dataclass(frozen=True)
class HangVerdict:
    culprit_ranks: list[int]
    waiting_ranks: list[int]
    cause: Cause
    group: str | None           # the process group's name (pg_config key), e.g. "37"
    collective: str | None
    seq: int | None
    hosts: dict[int, str]
    headline: str
    origins: tuple[Origin, ...] = ()
    next_steps: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        return self.cause != Cause.NONE


def ranks_text(ranks: list[int] | tuple[int, ...]) -> str:
    """"4-7", "0, 2, 5", "0-3, 8" for sorted ranks."""
    if not ranks:
        return "none"
    parts: list[str] = []
    start = prev = ranks[0]
    for rank in list(ranks[1:]) + [None]:
        if rank is not None and rank == prev + 1:
            prev = rank
            continue
        parts.append(str(start) if start == prev else
                     f"{start}, {prev}" if prev == start + 1 else f"{start}-{prev}")
        if rank is not None:
            start = prev = rank
    return ", ".join(parts)


def _who(rank: int, hosts: dict[int, str]) -> str:
    return f"rank {rank}" + (f" ({hosts[rank]})" if rank in hosts else "")


def _entry_text(entry: Entry, kind: str) -> str:
    number = entry.p2p_seq if kind == "p2p" else entry.seq
    frame = entry.user_frame()
    return f"{entry.op} #{number}" + (f" at {frame.short()}" if frame else "")


def _sentence(finding: ChannelFinding, rank: int) -> str:
    member = finding.members[rank]
    where = f"{finding.op or 'call'} #{finding.seq} of group {finding.channel.label} " \
            f"(ranks {ranks_text(finding.channel.group.key.ranks)})"
    others = [r for r in finding.channel.members if r not in finding.culprits]
    if member.did == Cause.NOT_ENTERED.value:
        return f"never entered {where}"
    if member.did == Cause.DEAD.value:
        why = "" if member.detail in ("", "no dump") else f"; {member.detail}"
        return f"left no dump (dead or unresponsive{why}) at {where}"
    if member.did in (c.value for c in MISMATCHES) and member.entry is not None:
        others = [r for r, m in finding.members.items()
                  if m.entry is not None and r not in finding.culprits]
        return (f"called {member.entry.describe()} where ranks {ranks_text(others)} called "
                f"{_reference(finding)} at #{finding.seq} of group {finding.channel.label}")
    if member.detail == "its peers completed it":
        return (f"never completed {where}, which ranks {ranks_text(others)} completed "
                "(its GPU, stream or process stopped there)")
    return f"issued {where} and never completed it, nor did any other member (transport)"


def _reference(finding: ChannelFinding) -> str:
    for rank, member in finding.members.items():
        if rank not in finding.culprits and member.entry is not None:
            return member.entry.describe()
    return finding.op or "?"


def next_steps(cause: Cause, hosts: list[str]) -> tuple[str, ...]:
    on = f" on {', '.join(hosts)}" if hosts else " on the culprit's host"
    steps = {
        Cause.NOT_ENTERED: ("the rank stopped before the collective: look at its Python "
                            "stack (py-spy dump --pid PID, or collscope watch's stack files): "
                            "a data loader, a checkpoint write, a branch only that rank took"),
        Cause.OP_MISMATCH: ("the ranks called different collectives at the same point: a "
                            "rank-dependent branch in the training code (see the stacks)"),
        Cause.SIZE_MISMATCH: ("the ranks passed tensors of different sizes: uneven batches "
                              "or shapes that depend on the rank"),
        Cause.DTYPE_MISMATCH: "the ranks passed different dtypes (mixed precision on one rank?)",
        Cause.DEAD: ("the rank died or stopped answering (a Python dumper also needs the "
                     "GIL its main thread may hold): read its log and dmesg (OOM killer, "
                     f"segfault), then collscope doctor{on}"),
        Cause.NOT_COMPLETED: (f"collscope doctor{on} (GPU errors: dmesg Xid, amd-smi / "
                              "nvidia-smi; links: collscope links)"),
    }
    return (steps[cause],) if cause in steps else ()


def judge(findings: list[ChannelFinding], roots: list[int], waiting: list[int],
          hosts: dict[int, str], stacks: dict[int, StackDump]) -> HangVerdict:
    if not roots:
        return HangVerdict([], [], Cause.NONE, None, None, None, hosts,
                           "no hang: every group's members completed the same calls")
    origins = tuple(_origin(findings, rank, hosts, stacks) for rank in roots)
    first = origins[0]
    sentences = []
    for context in dict.fromkeys((o.cause, o.group, o.seq) for o in origins):
        same = [o for o in origins if (o.cause, o.group, o.seq) == context]
        who = _who(same[0].rank, hosts) if len(same) == 1 else "ranks " + ", ".join(
            _who(o.rank, hosts).removeprefix("rank ") for o in same)
        sentences.append(f"{who} {same[0].sentence}" + "".join(
            f"; rank {o.rank}'s main thread is at {o.where}" for o in same if o.where))
    headline = "HANG: " + "; ".join(sentences)
    if waiting:
        who = f"Rank {waiting[0]} waits" if len(waiting) == 1 else \
            f"Ranks {ranks_text(waiting)} wait"
        headline += f". {who} on {'it' if len(roots) == 1 else 'them'}"
    lasts = [f"Rank {o.rank}'s last call there: {o.last}" for o in origins
             if o.last and o.cause in (Cause.NOT_ENTERED, Cause.DEAD)]
    if lasts:
        headline += ". " + "; ".join(lasts)
    root_hosts = sorted({hosts[r] for r in roots if r in hosts})
    return HangVerdict(sorted(roots), waiting, first.cause, first.group_name, first.op, first.seq,
                       hosts, headline, origins, next_steps(first.cause, root_hosts))


def _origin(findings: list[ChannelFinding], rank: int, hosts: dict[int, str],
            stacks: dict[int, StackDump]) -> Origin:
    mine = [f for f in findings if rank in f.culprits]
    if not mine:      # a member of a cycle that names no culprit: the transport
        mine = [f for f in findings if rank in f.members and f.stuck]
    finding = min(mine, key=lambda f: (CAUSE_ORDER.index(f.cause) if f.cause in CAUSE_ORDER
                                       else len(CAUSE_ORDER), _record(f, rank)))
    member = finding.members[rank]
    cause = Cause(member.did) if member.did in {c.value for c in Cause} else finding.cause
    last = _entry_text(member.last, finding.channel.kind) if member.last else None
    stack = stacks.get(rank)
    frame = innermost_user_frame(stack.frames) if stack else None
    where = None
    if frame is not None and stack is not None:
        inner = stack.frames[-1]
        where = frame.short() + (f" ({inner.name})" if inner is not frame else "")
    return Origin(rank, cause, finding.channel.label, finding.channel.group.key.name,
                  finding.channel.group.key.ranks,
                  finding.op, finding.seq, _sentence(finding, rank), last, where)


def _record(finding: ChannelFinding, rank: int) -> int:
    member = finding.members[rank]
    entry = member.entry or member.last
    return entry.record_id if entry else 1 << 62
