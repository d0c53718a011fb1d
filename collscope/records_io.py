"""Writing and reading collscope's records: JSON Lines flushed record by record (a crash loses
nothing written), bench's CSV, and reading JSON Lines back. The schema is collscope.results."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from dataclasses import fields
from typing import IO, Any

from collscope.results import BenchResult

CSV_COLUMNS = [f.name for f in fields(BenchResult)
               if f.name not in ("kind", "rank_times_us", "rank_op_us")]


class JsonlWriter:
    """Appends records as JSON Lines, flushing each one so a crash loses nothing written."""

    def __init__(self, path: str | os.PathLike[str]):
        # "-" is stdout (a pipe: flushed, not fsynced, not closed).
        self._stdout = str(path) == "-"
        self._file: IO[str] = sys.stdout if self._stdout else \
            open(path, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n")
        self._file.flush()
        if self._stdout:
            return
        try:
            os.fsync(self._file.fileno())
        except OSError:  # a pipe or /dev/null (-o /dev/stdout, -o /dev/null) cannot be synced
            pass

    def close(self) -> None:
        if not self._stdout:
            self._file.close()


class CsvWriter:
    """One row per BenchResult, flushed per row."""

    def __init__(self, path: str | os.PathLike[str]):
        self._file: IO[str] = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115
        self._csv = csv.DictWriter(self._file, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        self._csv.writeheader()
        self._file.flush()

    def write(self, result: BenchResult) -> None:
        self._csv.writerow(result.to_dict())
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_jsonl(text: str) -> list[dict[str, Any]]:
    """Records of a JSON Lines text; blank lines skipped."""
    return [json.loads(line) for line in io.StringIO(text) if line.strip()]
