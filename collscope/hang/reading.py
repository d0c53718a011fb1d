"""Reading the files `collscope hang` is given: Flight Recorder dumps (pickle and JSON, any
compression the shared decoder knows), `collscope watch`'s stack and no-answer files, and
``ncclras`` output; which file is which, and many of them at once.

A large job's dumps are streamed: each file is decoded, reduced to what the analysis reads
(:mod:`collscope.hang.reduce`) and released before the next, by worker processes in parallel
(decoding is CPU-bound) as many as the memory budget holds, at most one per core, each taking
batches of files and sending back the reduced dumps (as ``collscope trace`` reads traces).
Files are judged and reported in the order they were given, whoever read them."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from collscope.errors import UsageError
from collscope.hang.dumps import load_pickle, parse_dump, parse_stack
from collscope.hang.model import NoAnswer, RankDump, StackDump
from collscope.hang.typed_json import typed_dump
from collscope.parsers.decode import DecodeError, decompress
from collscope.runtime.gc_pause import gc_paused

MAX_DUMP_BYTES = 512 << 20     # a ring buffer of 20 000 entries with stacks is a few MiB
DEFAULT_MEMORY_MIB = 1536
# benchmarks/hang_scale.py: a worker holds one decoded dump at a time (2 000 entries with 16
# stack frames each: ~15 MiB of Python objects) beside its imports; the main process holds
# the reduced dumps (a few entries per rank: ~25 MiB per 1 000 ranks).
WORKER_BASE_MIB = 80
WORKER_MIB_PER_FILE_MIB = 30   # decoded objects per MiB of (uncompressed) dump
PARALLEL_MIN_FILES = 64        # fewer: read in this process (a worker costs ~0.1 s to start)
_JSON_OBJECT = re.compile(rb"[ \t\r\n]*\{")     # JSON's own white space, then an object
BATCH_FILES = 64               # files a worker reads per task (its reduced dumps come back at once)


# What tells ncclras output (hang.ras reads it) from a dump, text and JSON.
_TEXT_MARKS = ("Job summary", "Communicators...", "RAS Monitor Mode", "PEER_DEAD",
               "Missing communicator data", "ranks have launched up to operation",
               "Group     Comms")
def looks_like_ras_text(text: str) -> bool:
    return any(mark in text for mark in _TEXT_MARKS)


def looks_like_ras_json(text: str) -> bool:
    return '"communicators"' in text or ('"event"' in text and '"peer"' in text)


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


def _read_one(path: Path, inputs: Inputs, reduce: bool) -> None:
    raw = path.read_bytes()
    if len(raw) > MAX_DUMP_BYTES:
        raise ValueError(f"{len(raw) >> 20} MiB is larger than any dump")
    try:
        data = decompress(raw, MAX_DUMP_BYTES)
    except DecodeError as error:
        raise ValueError(str(error)) from None
    if data[:1] == b"\x80":
        dump = load_pickle(data)
        inputs.dumps.append(parse_dump(dump, str(path), "pickle", reduce))
        return
    if not data.strip():
        raise ValueError("empty file, not a dump")
    typed = typed_dump(data) if reduce and _JSON_OBJECT.match(data) else None
    if typed is not None:
        inputs.dumps.append(parse_dump(typed, str(path), "json", reduce))
        return
    text = data.decode("utf-8", errors="replace")
    if text.lstrip().startswith("{") or (text.lstrip().startswith("[")
                                         and not looks_like_ras_text(text)):
        _read_json(text, path, inputs, reduce)
        return

    if looks_like_ras_text(text):
        inputs.ras.append((str(path), "text", text))
        return
    raise ValueError("not a dump: neither a Flight Recorder pickle or JSON, nor ncclras "
                     "output, nor a collscope watch stack file")


def _read_json(text: str, path: Path, inputs: Inputs, reduce: bool) -> None:
    try:
        document = _decode_json(text)
    except json.JSONDecodeError as error:
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
        inputs.dumps.append(parse_dump(document, str(path), "json", reduce))


def reading_workers(files: list[tuple[Path, bool]], memory_mib: int) -> int:
    """How many processes read the files: as many as ``memory_mib`` holds at the largest
    file's estimated peak, at most one per core; 1 (this process) for small sets."""
    if len(files) < PARALLEL_MIN_FILES:
        return 1
    largest = max(path.stat().st_size for path, _ in files) / 2**20
    per_worker = WORKER_BASE_MIB + WORKER_MIB_PER_FILE_MIB * largest
    fit = int(memory_mib // per_worker)
    return max(1, min(os.cpu_count() or 1, fit))


def read_inputs(paths: list[str | os.PathLike[str]], workers: int | None = None,
                memory_mib: int = DEFAULT_MEMORY_MIB, reduce: bool = True) -> Inputs:
    """Every file of ``paths``, read (``workers`` processes, or as many as ``memory_mib``
    holds); UsageError (exit 2) for the first file given by name that cannot be read, in the
    order given; files found in folders that are not dumps are skipped and said."""
    files = expand(paths)
    count = workers if workers is not None else reading_workers(files, memory_mib)
    inputs = Inputs()
    for path, explicit, read, error in _outcomes(files, count, reduce):
        if error is not None:
            if explicit:
                raise UsageError(f"{path}: {error}")
            inputs.skipped.append(f"{path}: {error}")
            continue
        inputs.dumps += read.dumps
        inputs.stacks.update(read.stacks)
        inputs.no_answer += read.no_answer
        inputs.ras += read.ras
    return inputs


Outcome = tuple[Path, bool, "Inputs", "str | None"]


def _outcomes(files: list[tuple[Path, bool]], count: int, reduce: bool) -> Iterator[Outcome]:
    if count <= 1 or len(files) < 2:
        with gc_paused():
            yield from read_batch(files, reduce)
        return
    batch = max(1, min(BATCH_FILES, len(files) // (count * 4)))
    batches = [files[i:i + batch] for i in range(0, len(files), batch)]
    with ProcessPoolExecutor(max_workers=count) as pool, gc_paused():
        for outcomes in pool.map(read_batch, batches, [reduce] * len(batches)):
            in_batch: dict[int, tuple[int, ...]] = {}
            for path, explicit, read, error in outcomes:
                for dump in read.dumps:
                    _share_groups(dump, in_batch)
                yield path, explicit, read, error


_SHARED_RANKS: dict[tuple[int, ...], tuple[int, ...]] = {}


def _share_groups(dump: RankDump, in_batch: dict[int, tuple[int, ...]]) -> None:
    """One tuple per distinct member list across batches. A batch's pickle already shares
    one per list, so each is looked up by content once per batch (by id after that): hashing
    a 16 384-rank tuple per dump made reading 16 384 dumps quadratic."""
    for name, ranks in dump.groups.items():
        shared = in_batch.get(id(ranks))
        if shared is None:
            shared = in_batch[id(ranks)] = _SHARED_RANKS.setdefault(ranks, ranks)
        dump.groups[name] = shared


def read_batch(files: list[tuple[Path, bool]], reduce: bool) -> list[Outcome]:
    """Each file read (in a worker process: what it keeps travels back), with why not."""
    outcomes: list[Outcome] = []
    with gc_paused():
        for path, explicit in files:
            read = Inputs()
            try:
                _read_checked(path, read, reduce)
                outcomes.append((path, explicit, read, None))
            except ValueError as error:
                outcomes.append((path, explicit, read, str(error)))
    return outcomes


def _read_checked(path: Path, inputs: Inputs, reduce: bool) -> None:
    try:
        _read_one(path, inputs, reduce)
    except (TypeError, KeyError, AttributeError, IndexError) as odd:
        raise ValueError(f"a dump of an unexpected shape ({type(odd).__name__}: "
                         f"{odd}); not a Flight Recorder dump as torch writes "
                         "them") from None


def read_whole(dump: RankDump) -> RankDump:
    """``dump`` read again with every entry (a reduced dump lacks one the analysis needs)."""
    inputs = Inputs()
    _read_checked(Path(dump.path), inputs, reduce=False)
    return next(d for d in inputs.dumps if d.rank == dump.rank)



def _decode_json(text: str) -> Any:
    """json.loads' result, by msgspec where it decodes the text (1.5x faster); json.loads'
    own error (its message names the line) where it does not."""
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return json.loads(text)
