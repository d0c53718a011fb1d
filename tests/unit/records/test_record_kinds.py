"""Every record kind is one msgspec struct, read back typed: files written by collscope 0.x
(tests/fixtures/own/records, the own watch and links runs, the golden import outputs) decode
into their classes and write out again with the same fields, values and order."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from collscope.records.base import Record, read_record
from collscope.records.jsonl import record_line
from collscope.records.kinds import class_of, record_classes
from tests.conftest import fixture_path


def _written_lines() -> list[tuple[str, str]]:
    """(where, line) of every record in the 0.x files."""
    files = sorted(fixture_path("own/records").glob("*.jsonl"))
    files += sorted(fixture_path("own/watch").glob("*.jsonl"))
    files += sorted(fixture_path("own/links").glob("*.jsonl"))
    lines = [(f"{path.name}:{number}", line) for path in files
             for number, line in enumerate(path.read_text().splitlines(), start=1) if line]
    for path in sorted(fixture_path("golden/cases").glob("import__*.txt")):
        lines += [(f"{path.name}:{number}", line)
                  for number, line in enumerate(path.read_text().splitlines(), start=1)
                  if line.startswith("{")]
    return lines


def _default(cls: type, name: str) -> object:
    field = next(f for f in msgspec.structs.fields(cls) if f.name == name)
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default


LINES = _written_lines()
KINDS = record_classes()


def test_every_kind_is_in_the_old_files():
    seen = {json.loads(line)["kind"] for _, line in LINES}
    assert set(KINDS) - seen == set()


def test_every_old_record_reads_back_typed_and_writes_the_same():
    failures = []
    for where, line in LINES:
        written = json.loads(line)
        cls = class_of(written, KINDS)
        assert cls is not None, f"{where}: no class for kind {written['kind']!r}"
        record = read_record(cls, written)
        again = json.loads(record_line(record.to_dict()))
        # fields added since a file was written come back as their defaults, after it
        added = {name: again[name] for name in again if name not in written}
        kept = {name: again[name] for name in again if name in written}
        if list(kept.items()) != list(written.items()) or \
                any(value != _default(cls, name) for name, value in added.items()):
            changed = [name for name in kept if kept[name] != written[name]]
            failures.append(f"{where} ({cls.__name__}): lost {set(written) - set(kept)}, "
                            f"changed {changed}, added {added}")
    assert failures == []


def test_watch_findings_read_as_watch_and_trace_findings_as_trace():
    by_id = {}
    for _, line in LINES:
        written = json.loads(line)
        if written["kind"] == "finding":
            by_id[written["id"]] = class_of(written, KINDS)
    assert by_id["watch.straggler"].joins == "watch"
    assert by_id["comm-exposed"].joins == "trace"


def test_one_class_per_kind_but_where_a_field_tells_them_apart():
    shared = {kind: classes for kind, classes in KINDS.items() if len(classes) > 1}
    assert list(shared) == ["finding"]
    assert "claims" in vars(shared["finding"][0])


def test_a_record_that_does_not_fit_its_class_names_the_field():
    cls = KINDS["watch_window"][0]
    with pytest.raises(msgspec.ValidationError, match="lateness_ms"):
        read_record(cls, {"kind": "watch_window", "time": 1.0, "rank": 0, "host": "h",
                          "local_rank": 0, "group": "0", "window": 3, "lateness_ms": "late",
                          "arrived_last": 0, "wait_caused_ms": 0.0, "collectives_total": {},
                          "oldest_pending_s": None, "straggler": False})


def test_kind_stands_where_0x_wrote_it():
    # fit/check/plan write kind first, predict last, a result before ci_halfwidth
    for kind, first in (("model_fit", True), ("prediction", False), ("result", False)):
        cls = KINDS[kind][0]
        assert (cls.kind_before == cls.__struct_fields__[0]) is first
    assert issubclass(KINDS["result"][0], Record)


def test_a_reader_fills_in_what_a_minimal_result_leaves_out():
    cls = KINDS["result"][0]
    result = read_record(cls, {"kind": "result", "collective": "all_reduce", "size_bytes": 8,
                               "dtype": "float", "in_place": False, "time_us": 1.0,
                               "busbw_gbs": 2.0, "algo": None})
    assert (result.op, result.algo, result.world_size) == ("none", "flat", 0)


def test_numbers_of_other_libraries_are_written_as_json_numbers():
    numpy = pytest.importorskip("numpy")
    cls = KINDS["watch_notice"][0]
    record = cls(numpy.float64(1.5), 3, "fr_overflow", "x")
    assert json.loads(record_line(record.to_dict()))["time"] == 1.5


def test_the_files_are_where_the_readme_says():
    readme = (fixture_path("own/records") / "README.md").read_text()
    for path in Path(fixture_path("own/records")).glob("*.jsonl"):
        assert f"`{path.name}`" in readme
