"""``ncclras`` output (NCCL >= 2.24; text, ``-f json`` from 2.28.7, monitor mode from 2.29):
per communicator, the ranks holding it back (pure).

RAS groups a communicator's ranks by a property and lists the members of the small groups
only (at most 25 % of the ranks and 10 members, verbose mode relaxes it): in "26 ranks have
launched up to operation 6650 / 6 ranks have launched up to operation 6649" the six listed
ranks are the laggards; when the listed ranks are the ones *ahead* (nccl#1911), the laggards
are the communicator's other ranks. Lower operation counts lag (the culprits: they did not
launch what the others wait in); missing, unresponsive and dead ranks are culprits first.
NCCL 2.28.9's JSON can lack the comma after ``nvml_dev`` in ``missing_ranks`` (fixed in
2.29.2): it is repaired and the repair is said."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from collscope.hang.model import CAUSE_ORDER, Cause
from collscope.hang.outcome import HangAnalysis
from collscope.hang.report import communicator_record
from collscope.hang.verdict import HangVerdict, next_steps, ranks_text

if TYPE_CHECKING:
    from collscope.hang.reading import Inputs

_MISSING_COMMA = re.compile(r'("nvml_devs?"\s*:\s*[^,\s{}\[\]]+|"nvml_devs"\s*:\s*\[[^\]]*\])'
                            r'(\s*\n\s*")')


def repair_json(text: str) -> tuple[Any, str | None]:
    """(document, what was repaired or None); ValueError when even the repair fails."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError:
        pass
    fixed, count = _MISSING_COMMA.subn(r"\1,\2", text)
    try:
        return json.loads(fixed), (f"repaired {count} missing comma(s) after nvml_dev "
                                   "(NCCL 2.28.9's JSON; fixed in 2.29.2)")
    except json.JSONDecodeError as error:
        raise ValueError(f"ncclras JSON that does not parse even with the nvml_dev comma "
                         f"repaired ({error.msg} at line {error.lineno})") from None


@dataclass
class Comm:
    """One communicator's evidence: its ranks' lag, missing and failing ranks."""

    name: str
    size: int | None
    culprits: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    cause: Cause = Cause.NONE
    what: str = ""                                   # the sentence about it
    hosts: dict[int, str] = field(default_factory=dict)
    where: dict[int, str] = field(default_factory=dict)   # rank -> "GPU g, pid p on host"


def _rank_place(r: Mapping[str, Any]) -> str:
    return (f"GPU {r.get('nvml_dev', r.get('cuda_dev', '?'))}, pid {r.get('pid', '?')} "
            f"on {r.get('host', '?')}")


def comm_from_json(raw: Mapping[str, Any]) -> Comm:
    comm = Comm(f"{raw.get('hash', '?')}", raw.get("size"))
    ranks = [r for r in raw.get("ranks", []) if isinstance(r, dict)]
    missing = [r for r in raw.get("missing_ranks", []) if isinstance(r, dict)]
    for r in ranks + missing:
        if "rank" in r and r.get("host"):
            comm.hosts[int(r["rank"])] = str(r["host"])
            comm.where[int(r["rank"])] = _rank_place(r)
    if missing:
        comm.culprits = sorted(int(r["rank"]) for r in missing if "rank" in r)
        comm.waiting = sorted(int(r["rank"]) for r in ranks if "rank" in r)
        comm.cause = Cause.DEAD
        states = {("considered dead" if (r.get("status") or {}).get("considered_dead")
                   else "unresponsive") for r in missing}
        comm.what = f"missing from communicator {comm.name} ({', '.join(sorted(states))})"
        return comm
    counts: dict[int, dict[str, int]] = {int(r["rank"]): dict(r.get("collective_counts") or {})
                                         for r in ranks if "rank" in r}
    lagging: dict[int, list[str]] = {}
    for op in sorted({op for c in counts.values() for op in c}):
        top = max(c.get(op, 0) for c in counts.values())
        for rank, c in counts.items():
            if c.get(op, 0) < top:
                lagging.setdefault(rank, []).append(f"{op} {c.get(op, 0)} of {top}")
    if lagging:
        comm.culprits = sorted(lagging)
        comm.waiting = sorted(set(counts) - set(lagging))
        comm.cause = Cause.NOT_ENTERED
        comm.what = (f"launched fewer operations in communicator {comm.name} than the others ("
                     + "; ".join(f"rank {r}: {', '.join(v)}" for r, v in sorted(lagging.items()))
                     + ")")
        return comm
    failing = sorted(int(r["rank"]) for r in ranks
                     if (r.get("status") or {}).get("async_error") not in (0, None)
                     or (r.get("status") or {}).get("init_state") not in (0, 7, None))
    if failing:
        comm.culprits, comm.cause = failing, Cause.NOT_COMPLETED
        comm.waiting = sorted(set(counts) - set(failing))
        comm.what = f"report an NCCL error in communicator {comm.name} (async_error/init_state)"
    return comm


_GROUP_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\w+)\s+(\S+)\s*$")
_COMM_HEAD = re.compile(r"^#(\d+)-(\d+)\s+\((\w+)\)\s+(\S+)")
_LAUNCHED = re.compile(r"^(\d+) ranks? ha(?:ve|s) launched up to operation (\d+)")
_STATUS = re.compile(r"^(\d+) ranks? ha(?:ve|s) status (\w+)")
_RANK_LINE = re.compile(r"^Rank (\d+) -- GPU (\d+) managed by process (\d+) on node (\S+)")
_MISSING_RANK = re.compile(r"^The missing ranks?: ([\d, ]+)")
_PROCESS = re.compile(r"Process (\d+) on node (\S+) managing GPU (\d+)")
_LIFECYCLE = ("INIT", "RUNNING", "FINALIZE")


def comms_from_text(text: str) -> tuple[list[Comm], list[str], list[str]]:
    """(communicators with evidence, dead processes, table rows flagged but not detailed)."""
    sizes: dict[str, int] = {}
    flagged: list[str] = []
    comms: list[Comm] = []
    dead: list[str] = []
    current: Comm | None = None
    blocks: list[tuple[str, int, list[int]]] = []     # (value, count, listed ranks)
    section = ""

    def close() -> None:
        if current is not None:
            _judge_text_comm(current, blocks)
            comms.append(current)

    for line in (raw.strip() for raw in text.splitlines()):
        if row := _GROUP_ROW.match(line):
            sizes[row.group(1)] = int(row.group(5))
            if row.group(8) != "OK":
                flagged.append(f"group #{row.group(1)}: {row.group(7)} {row.group(8)}")
            continue
        if line in ("DEAD", "INCOMPLETE", "TIMEOUT", "Errors", "Warnings"):
            section = line
            continue
        if head := _COMM_HEAD.match(line):
            close()
            current = Comm(f"#{head.group(1)}-{head.group(2)} ({head.group(3)})",
                           sizes.get(head.group(1)))
            blocks = []
            current.what = head.group(4)
            continue
        if current is None:
            if (process := _PROCESS.search(line)) and section in ("DEAD", "INCOMPLETE"):
                dead.append(f"process {process.group(1)} on {process.group(2)} GPU "
                            f"{process.group(3)}")
            elif "PEER_DEAD" in line and (process := _PROCESS.search(line)):
                dead.append(f"process {process.group(1)} on {process.group(2)} GPU "
                            f"{process.group(3)}")
            continue
        if found := (_LAUNCHED.match(line) or _STATUS.match(line)):
            blocks.append((found.group(2), int(found.group(1)), []))
        elif rank := _RANK_LINE.match(line):
            number = int(rank.group(1))
            current.hosts[number] = rank.group(4)
            current.where[number] = (f"GPU {rank.group(2)}, pid {rank.group(3)} on "
                                     f"{rank.group(4)}")
            if blocks:
                blocks[-1][2].append(number)
            elif current.what == "INCOMPLETE":
                current.culprits.append(number)
        elif missing := _MISSING_RANK.match(line):
            current.culprits += [int(r) for r in missing.group(1).replace(",", " ").split()]
    close()
    return comms, dead, flagged


def _judge_text_comm(comm: Comm, blocks: list[tuple[str, int, list[int]]]) -> None:
    flag = comm.what
    if flag == "INCOMPLETE":
        comm.cause = Cause.DEAD
        comm.culprits = sorted(set(comm.culprits))
        comm.what = f"missing from communicator {comm.name} (no data: unresponsive or dead)"
        return
    if not blocks:
        comm.what = f"{comm.name} {flag}"
        return
    if all(value.isdigit() for value, _, _ in blocks):
        low = min(blocks, key=lambda b: int(b[0]))
        behind_value = low[0]
        listed_low = low[2]
        comm.cause = Cause.NOT_ENTERED
        ahead = [r for value, _, listed in blocks if value != behind_value for r in listed]
        if listed_low:
            comm.culprits = sorted(listed_low)
        elif comm.size and ahead:
            comm.culprits = sorted(set(range(comm.size)) - set(ahead))
            comm.waiting = sorted(ahead)
        top = max(int(b[0]) for b in blocks)
        comm.what = (f"launched up to operation {behind_value} in communicator {comm.name} "
                     f"while {sum(n for v, n, _ in blocks if v != behind_value)} ranks launched "
                     f"up to {top}")
        return
    stages = [b for b in blocks if b[0] in _LIFECYCLE and b[2]]
    if len({b[0] for b in stages}) > 1:
        earliest = min(stages, key=lambda b: _LIFECYCLE.index(b[0]))
        comm.cause = Cause.NOT_ENTERED
        comm.culprits = sorted(earliest[2])
        later = sorted({b[0] for b in stages} - {earliest[0]})
        comm.what = (f"still {earliest[0]} in communicator {comm.name} while others are in "
                     f"{', '.join(later)} (a transition: repeat the query; unchanged means stuck)")


def analyse_ras(inputs: Inputs, given_hosts: Mapping[int, str] | None) -> HangAnalysis:
    comms: list[Comm] = []
    dead: list[str] = []
    flagged: list[str] = []
    notes: list[str] = []
    for path, fmt, text in inputs.ras:
        if fmt == "text":
            found, gone, rows = comms_from_text(text)
            comms += found
            dead += gone
            flagged += rows
            continue
        try:
            document, repaired = repair_json(text)
        except ValueError as error:
            from collscope.errors import UsageError

            raise UsageError(f"{path}: {error}") from None
        if repaired:
            notes.append(f"{path}: {repaired}")
        if "event" in document:
            peer = document.get("peer") or {}
            if document.get("event") == "PEER_DEAD":
                dead.append(f"process {peer.get('pid', '?')} on {peer.get('host', '?')} GPU "
                            f"{','.join(map(str, peer.get('nvml_devs', [])))}")
            continue
        comms += [comm_from_json(c) for c in document.get("communicators", [])
                  if isinstance(c, dict)]
    bad = [c for c in comms if c.cause != Cause.NONE]
    hosts = {r: h for c in bad for r, h in c.hosts.items()}
    hosts.update({int(r): str(h) for r, h in (given_hosts or {}).items()})
    culprits = sorted({r for c in bad for r in c.culprits})
    waiting = sorted({r for c in bad for r in c.waiting} - set(culprits))
    first = min(bad, key=lambda c: CAUSE_ORDER.index(c.cause)) if bad else None
    if first is not None:
        parts = [f"{'rank' if len(c.culprits) == 1 else 'ranks'} {ranks_text(c.culprits)}"
                 f" {c.what}" if c.culprits else
                 f"ncclras reports {c.what} but lists no rank (run ncclras -v)" for c in bad]
        places = [f"rank {r}: {first.where[r]}" for r in first.culprits if r in first.where]
        headline = "HANG (ncclras): " + "; ".join(parts) + (
            f". {'; '.join(places)}" if places else "")
        cause = first.cause
    elif dead:
        cause, headline = Cause.DEAD, "HANG (ncclras): dead " + "; ".join(dead)
    elif flagged:
        cause = Cause.NOT_ENTERED
        headline = ("HANG? (ncclras): " + "; ".join(flagged) + " with no rank listed: repeat "
                    "the query (ncclras -v); a mismatch that does not change is a hang")
    else:
        cause, headline = Cause.NONE, "no hang: ncclras reports every communicator consistent"
    if dead and first is not None:
        headline += ". Dead: " + "; ".join(dead)
    verdict = HangVerdict(culprits, waiting, cause, first.name if first else None, None,
                          None, hosts, headline,
                          next_steps=next_steps(cause, sorted(set(hosts.values()))))
    analysis = HangAnalysis(verdict, notes=notes + [f"skipped {s}" for s in inputs.skipped],
                            source="ncclras")
    analysis.group_records = [communicator_record(c.name, c.size, c.cause.value, c.culprits)
                               for c in comms]
    return analysis
