"""The Flight Recorder's format, decoded (pure): a dump's pickle or JSON -> ``RankDump``, and
`collscope watch`'s stack files -> ``StackDump``. Files from other machines are data: the
pickle reader refuses every class, so a dump holding an object is refused, never loaded
(pickle's own loader would run it). Which file is which, and reading many of them, is
:mod:`collscope.hang.reading`'s."""

from __future__ import annotations

import pickle
from itertools import chain, repeat
from operator import attrgetter, eq, itemgetter, or_, truth
from typing import Any, cast

from collscope.hang.model import Entry, Frame, GroupStatus, RankDump, StackDump
from collscope.hang.names import rank_and_host
from collscope.hang.reduce import EntryColumns, kept_entries
from collscope.hang.typed_json import any_field, any_value
from collscope.parsers.flight_recorder import (
    P2P_OPS,
    FlightEntry,
    group_ranks,
    is_done,
    split_name,
)

MAX_DUMP_BYTES = 512 << 20     # a ring buffer of 20 000 entries with stacks is a few MiB


class _NoClassUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, tuples, strings and numbers; refuses to look up any class or
    function, which is the only way a pickle makes objects or runs code."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"holds a Python object of class {module}.{name}")


class _WholeInput:
    """``data`` as the unpickler's file. Its ``peek`` hands the C unpickler everything left at
    once and without a copy, so it decodes at ``pickle.loads``' speed: a file without peek is
    asked for every opcode (2.5x slower), io.BufferedReader copies its buffer on each call
    (25 % slower on a 2,000-entry dump, benchmarks/hang_scale.py)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.view = memoryview(data)
        self.at = 0

    def peek(self, size: int = 0) -> memoryview:
        return self.view[self.at:]

    def read(self, size: int = -1) -> memoryview:
        end = len(self.data) if size < 0 else min(len(self.data), self.at + size)
        chunk, self.at = self.view[self.at:end], end
        return chunk

    def readinto(self, buffer: memoryview) -> int:
        chunk = self.read(len(buffer))
        buffer[:len(chunk)] = chunk
        return len(chunk)

    def readline(self, size: int = -1) -> memoryview:
        newline = self.data.find(b"\n", self.at)
        return self.read(-1 if newline < 0 else newline + 1 - self.at)


def load_pickle(data: bytes) -> Any:
    """The plain data in ``data``; ValueError (message: what is wrong) otherwise."""
    try:
        # cast: the C unpickler takes any buffer from read and peek; typeshed asks for bytes.
        return _NoClassUnpickler(cast(Any, _WholeInput(data))).load()
    except pickle.UnpicklingError as error:
        text = str(error)
        if text.startswith("holds a Python object"):
            raise ValueError(f"{text}: refused, never loaded (a Flight Recorder dump holds "
                             "only dicts, lists, strings and numbers)") from None
        raise ValueError(f"not a readable pickle ({text})") from None
    except EOFError:
        raise ValueError("truncated pickle (the file ends before the data does: the dump "
                         "was cut short)") from None
    except (IndexError, KeyError, TypeError, ValueError, OverflowError, MemoryError,
            AttributeError, RecursionError) as error:
        raise ValueError(f"not a readable pickle ({type(error).__name__})") from None


def parse_stack(document: dict[str, Any], path: str) -> StackDump:
    try:
        rank = int(document["rank"])
        frames = [Frame(str(f["filename"]), int(f["line"]), str(f["name"]))
                  for f in document.get("frames", [])]
    except (KeyError, TypeError, ValueError):
        raise ValueError("a main_thread_stack without rank or frames (filename, line, "
                         "name)") from None
    return StackDump(rank, path, document.get("host") or None, frames)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else list(value) if isinstance(value, tuple) else []


def _entry(raw: dict[str, Any]) -> Entry:
    group = raw.get("process_group") or ("", "")
    backend, op, peer = split_name(str(raw.get("profiling_name", "")))
    state = str(raw.get("state", ""))
    return Entry(
        record_id=_int(raw.get("record_id")), group_name=str(group[0]),
        group_desc=str(group[1]) if len(group) > 1 else "", pg_id=_int(raw.get("pg_id")),
        seq=_int(raw.get("collective_seq_id")), p2p_seq=_int(raw.get("p2p_seq_id")),
        op_id=_int(raw.get("op_id")),
        backend=backend, op=op, peer_local=peer,
        input_sizes=_list(raw.get("input_sizes")), input_dtypes=_list(raw.get("input_dtypes")),
        output_sizes=_list(raw.get("output_sizes")),
        output_dtypes=_list(raw.get("output_dtypes")),
        done=is_done(raw.get("retired"), state), state=state,
        raw_frames=raw["frames"] if isinstance(raw.get("frames"), list) else [],
        time_created_ns=raw.get("time_created_ns"))


# The fields read of every entry; pg_id (read of each group's last entry) and p2p_seq_id (of
# p2p entries) are read where needed, as ``_entry`` reads them.
_COLUMNS = itemgetter("record_id", "collective_seq_id", "op_id", "process_group",
                      "profiling_name", "retired", "state")
_TYPED_COLUMNS = attrgetter("record_id", "collective_seq_id", "op_id", "process_group",
                            "profiling_name", "retired", "state")


def entry_columns(raw_entries: list[dict[str, Any]]) -> EntryColumns | None:
    """What the reduction reads of every entry, a column per field (C-speed ``map``s, no
    object per entry); None when an entry lacks one of these fields or holds another type
    than torch writes where the type changes what the reduction compares (the numbers): such
    a dump is read whole, entry by entry (``_entry``)."""
    typed = bool(raw_entries) and type(raw_entries[0]) is FlightEntry   # msgspec checked all
    if typed:
        columns = list(zip(*map(_TYPED_COLUMNS, raw_entries)))
    else:
        try:
            columns = list(zip(*map(_COLUMNS, raw_entries)))
        except KeyError:
            return None
        # One pass over the number columns (a set per column cost twice as much); the other
        # fields are read as ``_entry`` reads them, whatever their type.
        if not columns or set(map(type, chain.from_iterable(columns[:3]))) != {int}:
            return None
    record_ids, seqs, op_ids, groups, names, retired, states = columns
    group_names = list(map(itemgetter(0), groups)) if typed else _group_names(groups)
    if group_names is None:
        return None
    try:
        ops = {name: split_name(str(name)) for name in set(names)}
    except TypeError:        # a name that cannot be a key (a list): read whole
        return None
    p2p_names = {name for name, (_, op, _) in ops.items() if op in P2P_OPS}
    if any(ops[name][2] is None for name in p2p_names):
        return None      # "send" without a peer: counted as peer 0 by the channels; read whole
    peers: list[int | None] = [None] * len(names)
    numbers = list(seqs)
    if p2p_names:          # a p2p op is numbered by its p2p_seq_id, in its peer's lane
        for position, name in enumerate(names):
            if name in p2p_names:
                number = raw_entries[position].get("p2p_seq_id")
                if type(number) is not int:
                    return None
                peers[position], numbers[position] = ops[name][2], number
    return EntryColumns(
        record_ids=list(record_ids), group_names=group_names, peers=peers, numbers=numbers,
        done=list(map(or_, map(truth, retired), map(eq, states, repeat("completed")))),
        op_ids=list(op_ids), pg_id_at=lambda position: _int(raw_entries[position].get("pg_id")),
        backend=next((ops[n][0] for n in names if ops[n][0]), ""))


def _group_names(groups: tuple[Any, ...]) -> list[str] | None:
    """Each entry's group name (its ``process_group``'s first item), or None where one is not
    a tuple or list of two or more beginning with a string. The few distinct groups are
    checked, not every entry's."""
    try:
        distinct = set(groups)
    except TypeError:        # lists (a JSON dump read untyped) or a member that is no key
        distinct = None
    if distinct is None:
        if not set(map(type, groups)) <= {tuple, list} or min(map(len, groups)) < 2:
            return None
        names = list(map(itemgetter(0), groups))
        return names if set(map(type, names)) == {str} else None
    name_of = {}
    for group in distinct:
        if type(group) not in (tuple, list) or len(group) < 2 or type(group[0]) is not str:
            return None
        name_of[group] = group[0]
    if len(name_of) == 1:
        return [group[0]] * len(groups)
    return list(map(name_of.__getitem__, groups))


def parse_dump(dump: Any, path: str, fmt: str, reduce: bool = False) -> RankDump:
    """A RankDump from the decoded dump; ValueError when it is not a Flight Recorder dump.
    ``reduce``: keep only the entries the analysis can read (:mod:`collscope.hang.reduce`)
    where the dump's shape allows; the others' sequence numbers are kept in ``dropped``."""
    if not isinstance(dump, dict) or "version" not in dump or not (
            "entries" in dump or "pg_config" in dump or "pg_status" in dump):
        raise ValueError("not a Flight Recorder dump (no 'version' with 'entries', "
                         "'pg_config' or 'pg_status')")
    raw_entries = dump.get("entries") or []
    typed = bool(raw_entries) and type(raw_entries[0]) is FlightEntry    # all are, by msgspec
    if not isinstance(raw_entries, list) or not typed and not all(map(isinstance, raw_entries,
                                                                       repeat(dict))):
        raise ValueError("a Flight Recorder dump whose 'entries' is not a list of objects")
    rank, host = rank_and_host(path, dump.get("rank"))
    groups: dict[str, tuple[int, ...]] = {}
    descs: dict[str, str] = {}
    for key, config in (dump.get("pg_config") or {}).items():
        if isinstance(config, dict):
            groups[str(key)] = group_ranks(config.get("ranks"))
            descs[str(key)] = str(config.get("desc", ""))
    status = {_int(pg): GroupStatus(_int(s.get("last_enqueued_collective"), -1),
                                    _int(s.get("last_completed_collective"), -1))
              for pg, s in (dump.get("pg_status") or {}).items() if isinstance(s, dict)}
    columns = entry_columns(raw_entries) if reduce else None
    kept = kept_entries(columns, status) if columns is not None else None
    if kept is None or columns is None:
        entries = sorted((_entry(e) for e in raw_entries), key=lambda e: e.record_id)
        backend = next((e.backend for e in entries if e.backend), "")
        dropped = {}
    else:
        entries = [_entry(raw_entries[i]) for i in kept.positions]
        backend, dropped = columns.backend, kept.dropped
    return RankDump(rank=rank, path=path, host=host, version=str(dump.get("version")),
                    fmt=fmt, backend=backend,
                    lib_version=str(dump.get("nccl_version") or dump.get("comm_lib_version")
                                    or ""),
                    groups=groups, group_descs=descs, entries=entries, status=status,
                    missing_fields=missing_fields(raw_entries, backend, fmt), dropped=dropped)


def missing_fields(raw_entries: list[dict[str, Any]], backend: str, fmt: str) -> list[str]:
    """What this dump cannot show, said once per dump (version 2.x fields left out or empty)."""
    if not raw_entries:
        return ["no entries (an empty ring buffer, or dumped without collectives)"]
    notes = []
    typed = type(raw_entries[0]) is FlightEntry
    if not (any_value if typed else _any_value)(raw_entries, "frames"):
        notes.append("no stack frames" + (" (the JSON dump carries none)" if fmt == "json"
                                          else " (dumped without stack traces)"))
    if not (any_value if typed else _any_value)(raw_entries, "time_discovered_started_ns"):
        notes.append("no start/complete times" + (
            " (gloo records none)" if backend == "gloo"
            else " (TORCH_NCCL_ENABLE_TIMING was not set)"))
    if backend != "gloo" and not (any_field if typed else _any_field)(raw_entries,
                                                                     "duration_ms"):
        notes.append("no duration_ms")
    return notes


def _any_value(raw_entries: list[dict[str, Any]], key: str) -> bool:
    return any(e.get(key) for e in raw_entries)


def _any_field(raw_entries: list[dict[str, Any]], key: str) -> bool:
    return any(key in e for e in raw_entries)
