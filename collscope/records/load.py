"""The one input loader: collscope JSON Lines or nccl-tests / rccl-tests outputs, as runs
(read by report, compare, model, trace's baseline and tune).

Users point collscope at whatever they have, so the kind of a file is decided by
its content, not its name: a file whose first non-blank line is a JSON object with a ``kind`` is
JSON Lines; anything else goes through the importer, which tells an nccl-tests / rccl-tests
text log, nccl-tests' ``-J`` JSON and rccl-tests' ``-Z csv|json`` apart by content. Lines
that cannot be used are reported with their line numbers (as the importer does), never
silently dropped.

``parse_input`` and ``group_records`` are pure; ``load_input`` is the only function that reads a
file.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePath
from typing import Any

import msgspec

from collscope.collectives.table import COLLECTIVES
from collscope.parsers.decode import DecodeError, decode_capture, decompress
from collscope.records.base import R, Record, read_record
from collscope.records.bench import BenchResult
from collscope.records.jsonl import looks_like_jsonl, parse_jsonl
from collscope.records.kinds import class_of, record_classes
from collscope.records.logs import LogImportError, import_log
from collscope.records.model import PredictionRecord
from collscope.records.sample import SampleRecord
from collscope.records.train import OverlapResult, TrainRecord
from collscope.records.tune import TuneRecord


class InputError(ValueError):
    """An input that holds nothing usable; the message names the file and the reason."""


def _holds(label: str) -> Any:
    """A Run field of records of the kinds whose class ``joins`` it; ``label`` names them
    in ``Input.holdings``."""
    return field(default_factory=list, metadata={"label": label})


@dataclass
class Run:
    """One run record with the measurements that follow it in its input, each read back as
    its record class (records.kinds; a kind's ``joins`` names the field it goes to).

    ``context`` is the run record as written (empty when an input has measurements before any
    run record); ``label`` is how charts and tables name the run.
    """

    label: str
    context: dict[str, Any]
    results: list[BenchResult] = field(default_factory=list)
    train: list[TrainRecord] = _holds("train record(s)")
    samples: list[SampleRecord] = _holds("sample(s)")
    predictions: list[PredictionRecord] = _holds("prediction(s)")   # `model predict --json`
    tune: list[TuneRecord] = _holds("tune record(s)")
    trace: list[Record] = _holds("trace record(s)")     # trace_* and trace's findings
    links: list[Record] = _holds("links record(s)")     # link, node, links_summary
    overlap: list[OverlapResult] = _holds("overlap record(s)")
    hang: list[Record] = _holds("hang record(s)")       # hang_group, hang_verdict
    watch: list[Record] = _holds("watch record(s)")     # watch_* and watch's findings
    doctor: list[Record] = _holds("doctor record(s)")   # doctor_finding, doctor_node

    def of(self, cls: type[R]) -> list[R]:
        """This run's records of one class, in file order (those of the field it joins)."""
        return [r for r in getattr(self, str(cls.joins), []) if isinstance(r, cls)]


# Run fields holding the record kinds other than run and result, and how `Input.holdings`
# names them.
OTHER_KINDS = {f.name: f.metadata["label"] for f in fields(Run) if "label" in f.metadata}
KINDS = record_classes()


@dataclass
class Input:
    """One file given on the command line, as runs."""

    path: str
    name: str
    kind: str                     # "jsonl" or "nccl-tests"
    runs: list[Run]
    warnings: list[str] = field(default_factory=list)

    @property
    def results(self) -> list[BenchResult]:
        return [result for run in self.runs for result in run.results]

    def counts(self) -> dict[str, int]:
        """Records per kind; ``runs`` counts run records (measurements before any run record,
        as `model predict --json` writes, form a run without one)."""
        counts = {"runs": sum(bool(run.context) for run in self.runs),
                  "results": len(self.results)}
        for kind in OTHER_KINDS:
            counts[kind] = sum(len(getattr(run, kind)) for run in self.runs)
        return counts

    def holdings(self) -> str:
        """What the input holds, in words: "1 run(s), 32 results", "no run record, 8
        prediction(s)" (kinds it has none of left out, runs and results always said)."""
        counts = self.counts()
        said = [f"{counts['runs']} run(s)" if counts["runs"] else "no run record",
                f"{counts['results']} results"]
        said += [f"{counts[kind]} {label}" for kind, label in OTHER_KINDS.items() if counts[kind]]
        return ", ".join(said)


def load_input(path: str | Path, name: str | None = None) -> Input:
    """Read one input file; raises InputError when it cannot be read or holds no records.
    The path is said as given (not normalised: the user must recognise it)."""
    given = os.fspath(path)
    try:
        text = decode_capture(Path(path).read_bytes())
    except OSError as error:
        raise InputError(f"{given}: cannot read it ({error.strerror or error})") from None
    except DecodeError as error:
        raise InputError(f"{given}: {error}") from None
    return parse_input(text, given, name)


def load_inputs(paths: list[str]) -> list[Input]:
    """Several inputs, each named by its file name (or more of its path where names repeat)."""
    names = display_names(paths)
    return [load_input(path, name) for path, name in zip(paths, names)]


def distinct_inputs(paths: list[str]) -> tuple[list[str], list[str]]:
    """(the paths with every repeat of an input left out, one line per repeat left out).

    An input is a repeat when it resolves to a path given before it or its content, unpacked
    when compressed (a .gz copy of a log included), has the same SHA-256 as one given
    before: the same measurements counted twice would fake a second run (``model fit`` would
    call the zero spread between the copies run-to-run variation). Unreadable paths are kept
    for the reader to report."""
    kept: list[str] = []
    said: list[str] = []
    by_path: dict[Path, str] = {}
    by_digest: dict[str, str] = {}
    for path in paths:
        try:
            resolved = Path(path).resolve()
            data = Path(path).read_bytes()
        except OSError:
            kept.append(path)
            continue
        if resolved in by_path:
            said.append(f"{path}: the same file as {by_path[resolved]}; read once")
            continue
        try:
            data = decompress(data)     # a .gz copy is the same log; text is not decoded here
        except DecodeError:
            pass
        digest = hashlib.sha256(data).hexdigest()
        if digest in by_digest:
            said.append(f"{path}: the same content as {by_digest[digest]} (SHA-256 "
                        f"{digest[:12]}); read once")
            continue
        by_path[resolved] = by_digest[digest] = path
        kept.append(path)
    return kept, said


def display_names(paths: list[str]) -> list[str]:
    """File names, with parent folders added until every name is unique (a/x.jsonl, b/x.jsonl)."""
    parts = [PurePath(path).parts or (path,) for path in paths]
    depth = 1
    while True:
        names = [str(PurePath(*p[-depth:])) for p in parts]
        repeated = [n for n, c in Counter(names).items() if c > 1]
        if not repeated or depth >= max(len(p) for p in parts):
            break
        depth += 1
    # Still equal (the same file twice): number them so legends stay distinct.
    seen: Counter[str] = Counter()
    unique = []
    for n in names:
        seen[n] += 1
        unique.append(n if Counter(names)[n] == 1 else f"{n} ({seen[n]})")
    return unique


def parse_input(text: str, path: str, name: str | None = None) -> Input:
    """An input from its text: JSON Lines when it starts with a JSON record, else a log."""
    name = name or PurePath(path).name or path
    text = text.removeprefix("\ufeff")
    if looks_like_jsonl(text):
        records, warnings = parse_jsonl(text, name)
        runs = group_records(records, name, warnings)
        warnings.sort(key=_line_number)
        if not runs:
            raise InputError(f"{path}: no run, result, train or sample records in it")
        return Input(path=path, name=name, kind="jsonl", runs=runs, warnings=warnings)
    try:
        imported = import_log(text, path)
    except LogImportError as error:
        raise InputError(str(error)) from None
    runs = []
    warnings = []
    for index, run in enumerate(imported):
        label = _run_label(name, index, len(imported), run.run.extra.get("label"))
        runs.append(Run(label=label, context=run.run.to_dict(), results=list(run.results)))
        warnings.extend(f"{name}: {warning}" for warning in run.warnings)
    return Input(path=path, name=name, kind="nccl-tests", runs=runs, warnings=warnings)


def group_records(records: list[tuple[int, dict[str, Any]]], name: str,
                  warnings: list[str]) -> list[Run]:
    """Runs from records in file order: each run record opens a run, the other records join it
    as their classes (measurements before any run record, as `model predict --json` writes,
    open a run without context). A record its class cannot read is said by its line and left
    out; so is a kind report does not read, except the raw trials and tries that another kind
    sums up."""
    runs: list[Run] = []

    def current() -> Run:
        if not runs:
            runs.append(Run(label="", context={}))
        return runs[-1]

    for number, raw in records:
        kind = raw.get("kind")
        cls = class_of(raw, KINDS)
        if cls is not None and cls.opens_run:
            runs.append(Run(label="", context=raw))
        elif cls is not None and cls.joins is not None:
            try:
                getattr(current(), cls.joins).append(read_record(cls, raw))
            except msgspec.ValidationError as error:
                warnings.append(f"{name}: line {number}: {kind} record{_unfit(cls, raw, error)}"
                                "; skipped")
        elif cls is None or cls.summed_in is None:
            read = ", ".join(sorted(k for k, c in KINDS.items()
                                    if any(x.joins or x.opens_run for x in c)))
            warnings.append(f"{name}: line {number}: record kind {kind!r} is not one report "
                            f"reads ({read}); skipped")
    for index, run in enumerate(runs):
        extra = run.context.get("extra")
        run.label = _run_label(name, index, len(runs),
                               extra.get("label") if isinstance(extra, dict) else None)
    return runs


def _unfit(cls: type[Record], raw: dict[str, Any], error: msgspec.ValidationError) -> str:
    """Why a record does not fit its class: the fields it must have and lacks,
    in the class's order, else what msgspec says of the field that does not fit."""
    missing = [f.name for f in msgspec.structs.fields(cls)
               if f.required and f.name not in cls.read_defaults and f.name not in raw]
    return f" without {', '.join(missing)}" if missing else f": {error}"


def tune_results(run: Run) -> list[BenchResult]:
    """A tune sweep's per-configuration medians as results, the configuration as ``algo``
    ("tune: NCCL_ALGO=Tree"), so `compare` can gate one sweep against another."""
    results = []
    for record in run.tune:
        if record.verdict == "failed":
            continue
        spec = COLLECTIVES.get(str(record.collective))
        # tune's trials run bench's default op: sum where the collective reduces
        data = {**record.to_dict(), "kind": "result", "algo": f"tune: {record.label}",
                "op": "sum" if spec is None or spec.reduces else "none"}
        try:
            results.append(read_record(BenchResult, data))
        except msgspec.ValidationError:
            continue
    return results


def _line_number(warning: str) -> int:
    match = re.search(r": line (\d+):", warning)
    return int(match.group(1)) if match else 0


def _run_label(name: str, index: int, count: int, label: Any) -> str:
    if count == 1:
        return name
    return f"{name} [{label}]" if isinstance(label, str) and label else f"{name} #{index + 1}"
