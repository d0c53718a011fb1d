"""The streamed read (trace/stream.py) gives the events, and so the analysis, of a whole-file
decode, wherever the pieces are cut."""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from collscope.trace import stream
from collscope.trace.analyze import read_rank
from collscope.trace.events import TraceInputError, load_trace
from collscope.trace.rank import analyse_doc
from tests.conftest import fixture_path


def streamed(path: Path) -> list:
    events: list = []
    stream.stream_events(path, events.extend)
    return events


@pytest.mark.parametrize("name", ["HolisticTraceAnalysis__nccl_data_rank0of2.json.gz",
                                  "HolisticTraceAnalysis__sampled_rank-1of128.json.gz"])
def test_small_pieces_give_the_whole_file_analysis(name, monkeypatch):
    path = fixture_path("traces", name)
    whole = analyse_doc(load_trace(path), str(path), None)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 50_000)        # hundreds of cuts
    monkeypatch.setattr(stream, "READ_BYTES", 7_000)
    assert streamed(path) == load_trace(path).traceEvents
    assert asdict(read_rank(str(path), None)) == asdict(whole)


def test_cut_marks_inside_strings_and_nested_objects_are_not_cuts(tmp_path, monkeypatch):
    tricky = [{"ph": "X", "cat": "cpu_op", "name": f"op}}, {{{i}", "ts": i, "dur": 1,
               "args": {"Input Dims": [{"a": 1}, {"b": [2]}], "stream": "}, {"}}
              for i in range(400)]
    doc = {"distributedInfo": {"rank": 3}, "traceEvents": tricky,
           "traceName": "x]y", "logs": ["a]", "[b"]}
    path = tmp_path / "t.json.gz"
    # Two gzip members, as a concatenation of gzip files reads.
    text = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(text[:1000]) + gzip.compress(text[1000:]))
    monkeypatch.setattr(stream, "CHUNK_BYTES", 3_000)
    monkeypatch.setattr(stream, "READ_BYTES", 500)
    events: list = []
    outside = stream.stream_events(path, events.extend)
    assert [e.name for e in events] == [e["name"] for e in tricky]
    assert outside.distributedInfo == {"rank": 3} and outside.traceEvents == []


def test_what_the_stream_cannot_cut_is_read_whole(tmp_path):
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2},
                                               7]}))
    with pytest.raises(stream.NotStreamable):
        streamed(odd)
    with pytest.raises(TraceInputError, match="not a torch.profiler"):
        read_rank(str(odd), None)       # the whole-file decode names what is wrong
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode())[:-6])
    with pytest.raises(TraceInputError, match="truncated"):
        read_rank(str(cut), None)
