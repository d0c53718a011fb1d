"""The one JSON Lines reader and writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collscope.errors import UsageError
from collscope.records.jsonl import looks_like_jsonl, parse_jsonl, read_records, write_records


def test_write_records_writes_one_compact_object_per_line(tmp_path: Path, capsys) -> None:
    records = [{"kind": "run", "argv": ["a b"]}, {"kind": "result", "time_us": 1.5}]
    write_records(tmp_path / "r.jsonl", records)
    text = (tmp_path / "r.jsonl").read_text()
    assert text == '{"kind":"run","argv":["a b"]}\n{"kind":"result","time_us":1.5}\n'
    write_records("-", records)
    assert capsys.readouterr().out == text


def test_write_records_refuses_nan_and_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_records(tmp_path / "r.jsonl", [{"kind": "result", "time_us": float("nan")}])
    with pytest.raises(UsageError, match="^--out: cannot write '/nonexistent-x/r.jsonl'"):
        write_records("/nonexistent-x/r.jsonl", [], "--out")


def test_parse_jsonl_says_every_line_it_skips() -> None:
    text = '{"kind":"run"}\n\n[1, 2]\n{"kind":"result"\n{"kind":"result","x":1}\n'
    records, warnings = parse_jsonl(text, "f.jsonl")
    assert records == [(1, {"kind": "run"}), (5, {"kind": "result", "x": 1})]
    assert warnings[0] == "f.jsonl: line 3: not a JSON object; skipped"
    assert warnings[1].startswith("f.jsonl: line 4: not JSON (") and len(warnings) == 2


def test_read_records_leaves_out_a_line_cut_short_and_reads_no_file_as_none(
        tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    path.write_text(json.dumps({"kind": "run"}) + "\n" + '{"kind": "res')
    assert read_records(path) == [{"kind": "run"}]
    assert read_records(tmp_path / "absent.jsonl") == []


def test_looks_like_jsonl_wants_a_record_first() -> None:
    assert looks_like_jsonl('\n{"kind": "run"}\nnot json')
    assert not looks_like_jsonl('{"no": "kind"}\n')
    assert not looks_like_jsonl("# nccl-tests log\n")
