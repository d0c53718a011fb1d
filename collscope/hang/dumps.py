"""Reading the files `collscope hang` is given: Flight Recorder dumps (pickle and JSON, any
compression the shared decoder knows), `collscope watch`'s stack and no-answer files, and
``ncclras`` output. Files from other machines are data: the pickle reader refuses every class,
so a dump holding an object is refused, never loaded (pickle's own loader would run it)."""

from __future__ import annotations

import ast
import functools
import io
import json
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collscope.errors import UsageError
from collscope.hang.model import Entry, Frame, GroupStatus, NoAnswer, RankDump, StackDump
from collscope.hang.names import rank_and_host
from collscope.parsers.decode import DecodeError, decompress

MAX_DUMP_BYTES = 512 << 20     # a ring buffer of 20 000 entries with stacks is a few MiB


class _NoClassUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, tuples, strings and numbers; refuses to look up any class or
    function, which is the only way a pickle makes objects or runs code."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"holds a Python object of class {module}.{name}")


def load_pickle(data: bytes) -> Any:
    """The plain data in ``data``; ValueError (message: what is wrong) otherwise."""
    try:
        return _NoClassUnpickler(io.BytesIO(data)).load()
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


@dataclass
class Inputs:
    """Everything read from the given paths, by kind."""

    dumps: list[RankDump] = field(default_factory=list)
    stacks: dict[int, StackDump] = field(default_factory=dict)
    no_answer: list[NoAnswer] = field(default_factory=list)
    ras: list[tuple[str, str, Any]] = field(default_factory=list)   # (path, format, data)
    skipped: list[str] = field(default_factory=list)                # "path: why"


def expand(paths: list[str | os.PathLike[str]]) -> list[tuple[Path, bool]]:
    """(file, given explicitly) for every file of ``paths`` (folders walked, hidden files
    and SOURCES/README notes left out)."""
    found: list[tuple[Path, bool]] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [(Path(root) / f, False) for f in sorted(files)
                          if not f.startswith(".") and not f.endswith(".md")]
        elif path.exists():
            found.append((path, True))
        else:
            raise UsageError(f"PATH: {item} does not exist; give dump files or folders")
    return found


def read_inputs(paths: list[str | os.PathLike[str]]) -> Inputs:
    inputs = Inputs()
    for path, explicit in expand(paths):
        try:
            try:
                _read_one(path, inputs)
            except (TypeError, KeyError, AttributeError, IndexError) as odd:
                raise ValueError(f"a dump of an unexpected shape ({type(odd).__name__}: "
                                 f"{odd}); not a Flight Recorder dump as torch writes "
                                 "them") from None
        except ValueError as error:
            if explicit:
                raise UsageError(f"{path}: {error}") from None
            inputs.skipped.append(f"{path}: {error}")
    return inputs


def _read_one(path: Path, inputs: Inputs) -> None:
    raw = path.read_bytes()
    if len(raw) > MAX_DUMP_BYTES:
        raise ValueError(f"{len(raw) >> 20} MiB is larger than any dump")
    try:
        data = decompress(raw, MAX_DUMP_BYTES)
    except DecodeError as error:
        raise ValueError(str(error)) from None
    if not data.strip():
        raise ValueError("empty file, not a dump")
    if data[:1] == b"\x80":
        dump = load_pickle(data)
        inputs.dumps.append(parse_dump(dump, str(path), "pickle"))
        return
    text = data.decode("utf-8", errors="replace")
    from collscope.hang.ras import looks_like_ras_text

    if text.lstrip().startswith("{") or (text.lstrip().startswith("[")
                                         and not looks_like_ras_text(text)):
        _read_json(text, path, inputs)
        return

    if looks_like_ras_text(text):
        inputs.ras.append((str(path), "text", text))
        return
    raise ValueError("not a dump: neither a Flight Recorder pickle or JSON, nor ncclras "
                     "output, nor a collscope watch stack file")


def _read_json(text: str, path: Path, inputs: Inputs) -> None:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        from collscope.hang.ras import looks_like_ras_json

        if looks_like_ras_json(text):
            inputs.ras.append((str(path), "json", text))
            return
        raise ValueError(f"not valid JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(document, dict):
        raise ValueError("JSON that is not an object: not a dump")
    kind = document.get("kind")
    if kind == "main_thread_stack":
        stack = parse_stack(document, str(path))
        inputs.stacks[stack.rank] = stack
    elif kind == "no_answer":
        inputs.no_answer.append(NoAnswer(str(path), [int(r) for r in document.get("ranks", [])],
                                         str(document.get("why", ""))))
    elif "communicators" in document or ("event" in document and "peer" in document):
        inputs.ras.append((str(path), "json", text))
    else:
        inputs.dumps.append(parse_dump(document, str(path), "json"))


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


_P2P_NAME = re.compile(r"^(send|recv)\s+(\d+)\s*(->|<-)\s*(\d+)$")


@functools.lru_cache(maxsize=4096)      # a buffer repeats a few names thousands of times
def _op(profiling_name: str) -> tuple[str, str, int | None]:
    """(backend, op, peer in group-local ranks) from ``nccl:send 0->1`` and the like."""
    backend, _, name = profiling_name.partition(":")
    if not name:
        backend, name = "", backend
    match = _P2P_NAME.match(name.strip())
    if match:
        op, first, _, second = match.groups()
        return backend, op, int(second)     # send SRC->DST: DST; recv DST<-SRC: SRC
    return backend, name.strip().split(" ")[0], None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else list(value) if isinstance(value, tuple) else []


def _entry(raw: dict[str, Any]) -> Entry:
    group = raw.get("process_group") or ("", "")
    backend, op, peer = _op(str(raw.get("profiling_name", "")))
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
        done=bool(raw.get("retired")) or state == "completed", state=state,
        raw_frames=raw["frames"] if isinstance(raw.get("frames"), list) else [],
        time_created_ns=raw.get("time_created_ns"))


def _ranks(text: Any) -> tuple[int, ...]:
    try:
        value = ast.literal_eval(text) if isinstance(text, str) else text
        return tuple(sorted(int(r) for r in value))
    except (ValueError, SyntaxError, TypeError):
        return ()


def parse_dump(dump: Any, path: str, fmt: str) -> RankDump:
    """A RankDump from the decoded dump; ValueError when it is not a Flight Recorder dump."""
    if not isinstance(dump, dict) or "version" not in dump or not (
            "entries" in dump or "pg_config" in dump or "pg_status" in dump):
        raise ValueError("not a Flight Recorder dump (no 'version' with 'entries', "
                         "'pg_config' or 'pg_status')")
    raw_entries = dump.get("entries") or []
    if not isinstance(raw_entries, list) or not all(isinstance(e, dict) for e in raw_entries):
        raise ValueError("a Flight Recorder dump whose 'entries' is not a list of objects")
    entries = sorted((_entry(e) for e in raw_entries), key=lambda e: e.record_id)
    rank, host = rank_and_host(path, dump.get("rank"))
    groups: dict[str, tuple[int, ...]] = {}
    descs: dict[str, str] = {}
    for key, config in (dump.get("pg_config") or {}).items():
        if isinstance(config, dict):
            groups[str(key)] = _ranks(config.get("ranks"))
            descs[str(key)] = str(config.get("desc", ""))
    status = {_int(pg): GroupStatus(_int(s.get("last_enqueued_collective"), -1),
                                    _int(s.get("last_completed_collective"), -1))
              for pg, s in (dump.get("pg_status") or {}).items() if isinstance(s, dict)}
    backend = next((e.backend for e in entries if e.backend), "")
    return RankDump(rank=rank, path=path, host=host, version=str(dump.get("version")),
                    fmt=fmt, backend=backend,
                    lib_version=str(dump.get("nccl_version") or dump.get("comm_lib_version")
                                    or ""),
                    groups=groups, group_descs=descs, entries=entries, status=status,
                    missing_fields=missing_fields(raw_entries, backend, fmt))


def missing_fields(raw_entries: list[dict[str, Any]], backend: str, fmt: str) -> list[str]:
    """What this dump cannot show, said once per dump (version 2.x fields left out or empty)."""
    if not raw_entries:
        return ["no entries (an empty ring buffer, or dumped without collectives)"]
    notes = []
    if not any(e.get("frames") for e in raw_entries):
        notes.append("no stack frames" + (" (the JSON dump carries none)" if fmt == "json"
                                          else " (dumped without stack traces)"))
    if not any(e.get("time_discovered_started_ns") for e in raw_entries):
        notes.append("no start/complete times" + (
            " (gloo records none)" if backend == "gloo"
            else " (TORCH_NCCL_ENABLE_TIMING was not set)"))
    if backend != "gloo" and not any("duration_ms" in e for e in raw_entries):
        notes.append("no duration_ms")
    return notes
