"""The one JSON Lines reader and writer of collscope's records (the kinds: records/), bench's
CSV writer, and the checks that an output can be written before anything is measured.

Written record by record and flushed (a crash loses nothing written); read back with every
line that is not a JSON object said by its line number, never silently dropped."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from collscope.errors import OutputError, UsageError
from collscope.records.bench import BenchResult
from collscope.testing.faults import planted

CSV_COLUMNS = [name for name in BenchResult.__struct_fields__
               if name not in ("rank_times_us", "rank_op_us")]


def cannot_write(flag: str | None, path: str | os.PathLike[str], error: OSError) -> str:
    """The one line for an output that cannot be opened: flag, path and the system's reason."""
    folder = os.path.dirname(os.path.abspath(path))
    why = f"folder {folder} does not exist" if not os.path.isdir(folder) else \
        (error.strerror or str(error))
    return f"{flag + ': ' if flag else ''}cannot write '{path}': {why}"


def probe_file(path: str | os.PathLike[str]) -> None:
    """Open ``path`` for writing as a writer will, leaving nothing changed; OSError when that
    fails. A new file is created and removed again (so /proc, /sys and read-only mounts
    refuse it, as they would the writer); an existing one is opened for appending and given
    an empty write, which /dev/full already refuses. A named pipe is not opened (that would
    wait for its reader). Other checkers of the same path at the same moment (each node's
    first rank, on a shared file system) may create and remove it in between: a file made by
    another shows it can be made, and one that vanished is looked at again."""
    for _ in range(3):
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                return    # another checker made it just now
            os.unlink(path)
            return
        if stat.S_ISFIFO(mode):
            return
        try:
            handle = os.open(path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError:
            continue      # another checker removed its probe: look again
        try:
            os.write(handle, b"")
        finally:
            os.close(handle)
        return


def probe_folder(path: str | os.PathLike[str]) -> None:
    """Create the folder ``path`` (and missing parents), as the writer will, and a file in it,
    removed again; OSError when any of it fails.

    The folders are left in place: every node's first rank may check one path of a shared file
    system at the same moment, and one checker removing a folder another has just found would
    fail it (measured: 166 of 400 concurrent checks failed when the folders were removed)."""
    import tempfile

    target = os.path.abspath(path)
    existing = target
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise NotADirectoryError(errno.ENOTDIR, f"{existing} is a file, not a folder")
    os.makedirs(target, exist_ok=True)      # exist_ok: another checker may have made it
    handle, name = tempfile.mkstemp(dir=target, prefix=".collscope-write-check-")
    os.close(handle)
    os.unlink(name)


def check_writable(flag: str, path: str | None) -> None:
    """An output FILE given to ``flag`` must be writable before the ranks measure (a run
    should not end in a traceback after measuring): really opened as the writer will
    (collscope.records.jsonl.probe_file, which leaves nothing behind); UsageError (exit 2)
    naming the flag and the path."""
    if not path or path == "-":      # "-": stdout (collscope.records.jsonl.JsonlWriter)
        return
    if os.path.isdir(path):
        raise UsageError(f"{flag}: cannot write '{path}': it is a folder; give a file path")
    try:
        probe_file(path)
    except OSError as error:
        raise UsageError(cannot_write(flag, path, error)) from None


def check_writable_folder(flag: str, path: str | None) -> None:
    """A folder given to ``flag`` (files are written into it) must be creatable and
    writable: created (and left for the writer) with a file in it, removed again
    (records.jsonl.probe_folder)."""
    if not path:
        return
    try:
        probe_folder(path)
    except OSError as error:
        raise UsageError(f"{flag}: cannot write into folder '{path}': "
                         f"{error.strerror or error}") from None


class _FlushedWriter:
    """A file written record by record. Opening fails with UsageError (nothing measured yet:
    exit 2); a failed write with OutputError naming the flag, the path and how many records
    are in the file, after which the writer is closed and ignores further writes."""

    def __init__(self, path: str | os.PathLike[str], flag: str | None, newline: str | None):
        self.path = str(path)
        self.flag = flag
        self.written = 0
        self._stdout = self.path == "-"      # stdout: flushed, not fsynced, not closed
        try:
            self._file: IO[str] | None = sys.stdout if self._stdout else \
                open(path, "w", encoding="utf-8", newline=newline)  # noqa: SIM115
        except OSError as error:
            raise UsageError(cannot_write(flag, path, error)) from None

    def _put(self, text: str, counts: bool = True) -> None:
        if self._file is None:
            return
        try:
            full = planted("disk-full", 0)    # the writing process's file system fills up
            if full is not None and self.written >= full.arg:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self._file.write(text)
            self._file.flush()
        except BrokenPipeError:
            raise                             # the reader left: the CLI ends quietly
        except OSError as error:
            self.close()
            self._file = None
            where = "stdout" if self._stdout else f"'{self.path}'"
            raise OutputError(f"{self.flag + ': ' if self.flag else ''}writing {where} failed "
                              f"after {self.written} record(s), which it holds: "
                              f"{error.strerror or error}") from None
        self.written += counts
        if not self._stdout:
            try:
                os.fsync(self._file.fileno())
            except OSError:  # a pipe or /dev/null (-o /dev/stdout, -o /dev/null) cannot be synced
                pass

    def close(self) -> None:
        if self._file is not None and not self._stdout:
            try:
                self._file.close()
            except OSError:                   # a failed flush: write() said so already
                pass


class JsonlWriter(_FlushedWriter):
    """Appends records as JSON Lines, flushing each one so a crash loses nothing written."""

    def __init__(self, path: str | os.PathLike[str], flag: str | None = None):
        super().__init__(path, flag, None)

    def write(self, record: dict[str, Any]) -> None:
        self._put(record_line(record))


def record_line(record: dict[str, Any]) -> str:
    """One record as its JSON Lines line: compact, NaN and infinity refused (not JSON)."""
    return json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"


def write_records(target: str | os.PathLike[str], records: Iterable[dict[str, Any]],
                  flag: str | None = "--json") -> None:
    """``records`` as JSON Lines to the file ``target`` or, for '-', to stdout."""
    writer = JsonlWriter(target, flag)
    try:
        for record in records:
            writer.write(record)
    finally:
        writer.close()


class CsvWriter(_FlushedWriter):
    """One row per BenchResult, flushed per row."""

    def __init__(self, path: str | os.PathLike[str], flag: str | None = None):
        super().__init__(path, flag, "")
        self._row = io.StringIO()
        self._csv = csv.DictWriter(self._row, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        self._csv.writeheader()
        try:
            self._put(self._take(), counts=False)
        except OutputError as error:          # the header: nothing measured yet
            raise UsageError(str(error)) from None

    def _take(self) -> str:
        text = self._row.getvalue()
        self._row.seek(0)
        self._row.truncate()
        return text

    def write(self, result: BenchResult) -> None:
        self._csv.writerow(result.to_dict())
        self._put(self._take())


def looks_like_jsonl(text: str) -> bool:
    """Whether ``text`` is collscope JSON Lines: its first non-blank line a record (an object
    with a ``kind``)."""
    for line in text.splitlines():
        if line.strip():
            try:
                first = json.loads(line)
            except ValueError:
                return False
            return isinstance(first, dict) and "kind" in first
    return False


def _not_json(constant: str) -> float:
    """NaN and infinity, which Python's json reads but JSON has not (collscope never writes
    them): the line is not JSON."""
    raise json.JSONDecodeError(f"{constant} is not a JSON number", constant, 0)


def parse_jsonl(text: str, name: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """(line number, record) for every JSON object line, and a warning for every other line."""
    records: list[tuple[int, dict[str, Any]]] = []
    warnings: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, parse_constant=_not_json)
        except json.JSONDecodeError as error:
            warnings.append(f"{name}: line {number}: not JSON ({error.msg}); skipped")
            continue
        if not isinstance(record, dict):
            warnings.append(f"{name}: line {number}: not a JSON object; skipped")
            continue
        records.append((number, record))
    return records, warnings


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a JSON Lines file another process wrote: a line cut short by a kill (or
    anything else that is not a JSON object) is left out, an unreadable file has none."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [record for _, record in parse_jsonl(text, str(path))[0]]
