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
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from collscope.collectives.table import COLLECTIVES
from collscope.parsers.decode import DecodeError, decode_capture, decompress
from collscope.records.bench import BenchResult
from collscope.records.jsonl import looks_like_jsonl, parse_jsonl
from collscope.records.logs import LogImportError, import_log

# Fields a result record must have to be plotted or compared (the rest may be null or absent).
_REQUIRED_RESULT_FIELDS = ("collective", "size_bytes", "dtype", "in_place", "time_us",
                           "busbw_gbs")


class InputError(ValueError):
    """An input that holds nothing usable; the message names the file and the reason."""


@dataclass
class Run:
    """One run record with the measurements that follow it in its input.

    ``context`` is the run record as written (empty when an input has measurements before any
    run record); ``label`` is how charts and tables name the run.
    """

    label: str
    context: dict[str, Any]
    results: list[BenchResult] = field(default_factory=list)
    train: list[dict[str, Any]] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    predictions: list[dict[str, Any]] = field(default_factory=list)   # `model predict --json`
    tune: list[dict[str, Any]] = field(default_factory=list)      # `tune` sweep records
    trace: list[dict[str, Any]] = field(default_factory=list)     # `trace` records
    links: list[dict[str, Any]] = field(default_factory=list)     # `links` link/node records
    overlap: list[dict[str, Any]] = field(default_factory=list)   # `overlap` records
    hang: list[dict[str, Any]] = field(default_factory=list)      # `hang` group/verdict records
    watch: list[dict[str, Any]] = field(default_factory=list)     # `watch` job/window/stall/finding
    doctor: list[dict[str, Any]] = field(default_factory=list)    # `doctor` finding/node records


# Record kinds `collscope trace` writes (collscope.records.trace); report draws them as they are.
TRACE_KINDS = ("trace_collective", "trace_step", "trace_rank", "finding")
# Record kinds `collscope watch --json` writes (collscope.records.watch). Its straggler is a
# `finding` too, told from trace's by its id (watch.straggler): those join `watch`, the rest
# of the findings stay with `trace`. A watch file on a stall also holds hang's records.
WATCH_KINDS = ("watch_job", "watch_window", "watch_stall", "watch_agent", "watch_notice",
               "watch_clock")
WATCH_FINDING_PREFIX = "watch."
# The Run field each record kind other than run and result joins (a new kind: a line here, a
# Run field above and a line in OTHER_KINDS).
RUN_FIELD = {"train": "train", **dict.fromkeys(TRACE_KINDS, "trace"),
             **dict.fromkeys(("link", "node", "links_summary"), "links"),
             "sample": "samples", "prediction": "predictions", "tune": "tune",
             "overlap": "overlap", **dict.fromkeys(("hang_group", "hang_verdict"), "hang"),
             **dict.fromkeys(WATCH_KINDS, "watch"),
             **dict.fromkeys(("doctor_finding", "doctor_node"), "doctor")}
# Raw trials / tries: the tune and link records sum them up, so report reads them not.
SUMMED_KINDS = ("tune_trial", "link_try")
# Run fields holding the other record kinds, and how `Input.holdings` names them.
OTHER_KINDS = {"train": "train record(s)", "samples": "sample(s)",
               "predictions": "prediction(s)", "tune": "tune record(s)",
               "trace": "trace record(s)", "links": "links record(s)",
               "overlap": "overlap record(s)", "hang": "hang record(s)",
               "watch": "watch record(s)", "doctor": "doctor record(s)"}


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
    """Runs from records in file order: each run record opens a run, measurements join it
    (measurements before any run record, as `model predict --json` writes, open a run
    without context)."""
    runs: list[Run] = []

    def current() -> Run:
        if not runs:
            runs.append(Run(label="", context={}))
        return runs[-1]

    for number, record in records:
        kind = record.get("kind")
        if kind == "run":
            runs.append(Run(label="", context=record))
        elif kind == "result":
            result = _result(record)
            if result is None:
                missing = [f for f in _REQUIRED_RESULT_FIELDS if record.get(f) is None]
                what = (f"without {', '.join(missing)}" if missing
                        else "with a field of the wrong type")
                warnings.append(f"{name}: line {number}: result record {what}; skipped")
            else:
                current().results.append(result)
        elif kind in RUN_FIELD:
            check = _CHECKS.get(kind)
            if check is not None and not check[0](record):
                warnings.append(f"{name}: line {number}: {kind} record without {check[1]}; "
                                "skipped")
            else:
                getattr(current(), run_field(record)).append(record)
        elif kind not in SUMMED_KINDS:
            warnings.append(f"{name}: line {number}: record kind {kind!r} is not one report "
                            "reads (run, result, train, sample, trace_*, finding, prediction, "
                            "tune, link, node, links_summary, overlap, hang_group, "
                            "hang_verdict, watch_*); skipped")
    for index, run in enumerate(runs):
        extra = run.context.get("extra")
        run.label = _run_label(name, index, len(runs),
                               extra.get("label") if isinstance(extra, dict) else None)
    return runs


def run_field(record: dict[str, Any]) -> str:
    """The Run field a record of a kind in RUN_FIELD joins: by its kind, except that a finding
    whose id is watch's (``watch.straggler``) joins ``watch`` rather than ``trace``."""
    kind = record["kind"]
    if kind == "finding" and str(record.get("id", "")).startswith(WATCH_FINDING_PREFIX):
        return "watch"
    return RUN_FIELD[kind]


def tune_results(run: Run) -> list[BenchResult]:
    """A tune sweep's per-configuration medians as results, the configuration as ``algo``
    ("tune: NCCL_ALGO=Tree"), so `compare` can gate one sweep against another."""
    results = []
    for record in run.tune:
        if record.get("verdict") == "failed":
            continue
        spec = COLLECTIVES.get(str(record.get("collective")))
        # tune's trials run bench's default op: sum where the collective reduces
        data = {**record, "kind": "result", "algo": f"tune: {record.get('label', '?')}",
                "op": "sum" if spec is None or spec.reduces else "none"}
        result = _result(data)
        if result is not None:
            results.append(result)
    return results


def _line_number(warning: str) -> int:
    match = re.search(r": line (\d+):", warning)
    return int(match.group(1)) if match else 0


def _run_label(name: str, index: int, count: int, label: Any) -> str:
    if count == 1:
        return name
    return f"{name} [{label}]" if isinstance(label, str) and label else f"{name} #{index + 1}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _result(record: dict[str, Any]) -> BenchResult | None:
    """A BenchResult from a record, or None when a field that matching or charts rely on is
    absent or of the wrong type (keys must be hashable strings, numbers finite)."""
    if any(record.get(f) is None for f in _REQUIRED_RESULT_FIELDS):
        return None
    defaults: dict[str, Any] = {
        "count": 0, "op": "none", "root": -1, "world_size": 0, "iters": 0,
        "time_us_p50": None, "time_us_p95": None, "time_us_min": None, "time_us_max": None,
        "algbw_gbs": 0.0, "wrong": None, "algo": "flat",
    }
    data = {**defaults, **{k: v for k, v in record.items() if v is not None or k not in defaults}}
    typed = (all(isinstance(data[k], str) for k in ("collective", "dtype", "op", "algo"))
             and isinstance(data["in_place"], bool)
             and all(_is_int(data[k]) for k in ("size_bytes", "world_size"))
             and all(_is_finite(data[k]) for k in ("time_us", "busbw_gbs", "algbw_gbs"))
             and (data["wrong"] is None or _is_int(data["wrong"])))
    if not typed:
        return None
    try:
        return BenchResult.from_dict(data)
    except TypeError:
        return None


def _is_prediction(record: dict[str, Any]) -> bool:
    return (isinstance(record.get("collective"), str) and _is_int(record.get("size_bytes"))
            and _is_int(record.get("nodes")) and _is_finite(record.get("busbw_gbs")))


def _is_sample(record: dict[str, Any]) -> bool:
    return isinstance(record.get("metrics"), dict) and _is_finite(record.get("ts"))


def _is_watch_window(record: dict[str, Any]) -> bool:
    return (_is_finite(record.get("time")) and _is_int(record.get("rank"))
            and _is_finite(record.get("lateness_ms")))


# Kinds read only when a check passes: (the check, what a record failing it is without).
_CHECKS = {"sample": (_is_sample, "a numeric ts and a metrics object"),
           "prediction": (_is_prediction, "a collective, a size, nodes and busbw"),
           "watch_window": (_is_watch_window, "a numeric time, an integer rank and a "
                                              "numeric lateness_ms")}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)
