"""The Flight Recorder's format, decoded (pure): a dump's pickle or JSON -> ``RankDump``, and
`collscope watch`'s stack files -> ``StackDump``. Files from other machines are data: the
pickle reader refuses every class, so a dump holding an object is refused, never loaded
(pickle's own loader would run it). Which file is which, and reading many of them, is
:mod:`collscope.hang.reading`'s."""

from __future__ import annotations

import io
import pickle
from itertools import chain, repeat
from operator import attrgetter, eq, itemgetter, or_, truth
from typing import Any

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


def load_pickle(data: bytes) -> Any:
    """The plain data in ``data``; ValueError (message: what is wrong) otherwise."""
    try:
        # Buffered: protocol 2 (torch's) has no frames, and a reader without peek() is asked
        # for every opcode, 2.5x slower than pickle.loads; with it the same speed.
        return _NoClassUnpickler(io.BufferedReader(io.BytesIO(data), 1 << 20)).load()
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


_COLUMNS = itemgetter("record_id", "collective_seq_id", "p2p_seq_id", "op_id", "pg_id",
                      "process_group", "profiling_name", "retired", "state")
_TYPED_COLUMNS = attrgetter("record_id", "collective_seq_id", "p2p_seq_id", "op_id", "pg_id",
                            "process_group", "profiling_name", "retired", "state")


def entry_columns(raw_entries: list[dict[str, Any]]) -> EntryColumns | None:
    """What the reduction reads of every entry, a column per field (C-speed ``map``s, no
    object per entry); None when an entry lacks one of these fields or holds another type
    than torch writes where the type changes what the reduction compares (the numbers): such
    a dump is read whole, entry by entry (``_entry``)."""
    if raw_entries and type(raw_entries[0]) is FlightEntry:
        columns = list(zip(*map(_TYPED_COLUMNS, raw_entries)))   # msgspec checked the types
    else:
        try:
            columns = list(zip(*map(_COLUMNS, raw_entries)))
        except KeyError:
            return None
        # One pass over the five number columns (a set per column cost twice as much); the
        # other fields are read as ``_entry`` reads them, whatever their type.
        if not columns or set(map(type, chain.from_iterable(columns[:5]))) != {int}:
            return None
    record_ids, seqs, p2p_seqs, op_ids, pg_ids, groups, names, retired, states = columns
    if not set(map(type, groups)) <= {tuple, list} or min(map(len, groups)) < 2:
        return None
    group_names = list(map(itemgetter(0), groups))
    if set(map(type, group_names)) != {str}:
        return None
    try:
        ops = {name: split_name(str(name)) for name in set(names)}
    except TypeError:        # a name that cannot be a key (a list): read whole
        return None
    p2p_names = {name for name, (_, op, _) in ops.items() if op in P2P_OPS}
    if any(ops[name][2] is None for name in p2p_names):
        return None      # "send" without a peer: counted as peer 0 by the channels; read whole
    if p2p_names:
        p2p = list(map(p2p_names.__contains__, names))
        peers = [ops[name][2] if is_p2p else None for name, is_p2p in zip(names, p2p)]
        numbers = [p if is_p2p else s for is_p2p, s, p in zip(p2p, seqs, p2p_seqs)]
    else:
        peers, numbers = [None] * len(names), list(seqs)
    return EntryColumns(
        record_ids=list(record_ids), group_names=group_names, peers=peers, numbers=numbers,
        done=list(map(or_, map(truth, retired), map(eq, states, repeat("completed")))),
        op_ids=list(op_ids), pg_ids=list(pg_ids),
        backend=next((ops[n][0] for n in names if ops[n][0]), ""))


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
