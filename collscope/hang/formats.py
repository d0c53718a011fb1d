"""Which torch wrote a dump, from its format version (the dump's ``version``), and what to set
when a set of dumps recorded nothing (pure).

The versions were read from the released wheels themselves (an empty dump of
``_dump_nccl_trace`` / ``_dump_fr_trace`` in each, see docs/compat.md) and from the real dumps
of tests/fixtures/flight-recorder. What each torch calls its variables is
``collscope.runtime.flight_recorder``'s to say; this module only ties a format to releases.
"""

from __future__ import annotations

from collscope.errors import UsageError
from collscope.hang.model import RankDump
from collscope.runtime import flight_recorder

# format version -> (first, last) torch minor that writes it
WRITTEN_BY: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "2.4": ((2, 5), (2, 7)),        # 2.5.1, 2.6.0, 2.7.1
    "2.9": ((2, 8), (2, 8)),        # 2.8.0 (and the NCCL 2.27.3 job of tests/fixtures)
    "2.10": ((2, 9), (2, 15)),      # 2.9.1, 2.13.0, 2.15.0
}
ENTRIES = 2000                      # what to ask for: torch's own default ring from 2.11


class NothingRecorded(UsageError):
    """Every dump given is empty (no entry, no group status): nothing to judge, and not a
    healthy job either. The CLI says it as a warning and exits 3; watch says it as is."""


def releases(version: str) -> str:
    """'torch 2.9-2.15' for a format version; 'an unknown torch' for one not in the table."""
    span = WRITTEN_BY.get(version)
    if span is None:
        return "an unknown torch"
    (a, b), (c, d) = span
    return f"torch {a}.{b}" + (f"-{c}.{d}" if (a, b) != (c, d) else "")


def recorded_nothing(dumps: list[RankDump]) -> bool:
    return bool(dumps) and not any(d.entries or d.status for d in dumps)


def _rows(version: str) -> list[flight_recorder.Release]:
    span = WRITTEN_BY.get(version)
    rows = list(flight_recorder.RELEASES)
    if span is None:
        return rows
    return [r for r in rows if r.since <= span[1] and r.until >= span[0]] or rows


def _span(rows: list[flight_recorder.Release]) -> str:
    """'2.8-2.10', '2.11 on' for the torch minors ``rows`` cover together."""
    first, last = min(r.since for r in rows), max(r.until for r in rows)
    since = f"{first[0]}.{first[1]}"
    if last == flight_recorder.LATEST:
        return f"{since} on"
    until = f"{last[0]}.{last[1]}"
    return since if until == since else f"{since}-{until}"


def what_to_set(version: str) -> str:
    """What to set for the releases that write ``version``, and why their ring may be
    empty: 'set X=2000 in the job's environment and dump again (why; why)'."""
    rows = _rows(version)
    newest = rows[-1].buffer_variable
    said = f"set {newest}={ENTRIES} in the job's environment"
    older = [r for r in rows if r.buffer_variable != newest]
    if older:
        said += f" (torch {_span(older)}: {older[0].buffer_variable})"
    why = []
    no_gloo = [r for r in rows if "gloo" not in r.backends]
    if no_gloo:
        why.append(f"torch {_span(no_gloo)} records NCCL/RCCL only, gloo not at all")
    off = [r for r in rows if "gloo" in r.backends and "gloo" not in r.on_by_default]
    if off:
        why.append(f"torch {_span(off)} records gloo only when it is set")
    return said + " and dump again" + (f" ({'; '.join(why)})" if why else "")


def nothing_recorded_message(dumps: list[RankDump]) -> str:
    versions = sorted({d.version for d in dumps})
    formats = ", ".join(f"format {v}: {releases(v)}" for v in versions)
    ranks = len({d.rank for d in dumps})
    return (f"PATH: no verdict: the dumps of {ranks} rank(s) hold no entries and no group "
            f"status ({formats}): the Flight Recorder recorded nothing, which tells nothing "
            f"about the job, hung or not; {what_to_set(versions[-1])}")
