"""benchmarks/torch_pickle.py writes a dump as torch's C++ pickler does, byte for byte: the
16k-rank benchmark reads what NCCL writes, not what Python's pickler writes for the same data."""

from __future__ import annotations

import pickle

import pytest

from benchmarks.hang_scale import frame_table, make_dump
from benchmarks.torch_pickle import dumps
from collscope.hang.dumps import load_pickle
from tests.conftest import fixture_path


def _torch_pickles() -> list:
    """Every dump in tests/fixtures/flight-recorder that torch wrote (all of its pickles)."""
    return sorted(p for p in fixture_path("flight-recorder").glob("*/*")
                  if p.is_file() and p.read_bytes()[:2] == b"\x80\x02")


def test_every_dump_torch_wrote_is_written_again_byte_for_byte():
    paths = _torch_pickles()
    folders = {p.parent.name for p in paths}
    # gloo dumps of torch 2.8, 2.9, 2.13, 2.15 with stacks, and a real NCCL job's without.
    assert len(paths) >= 60 and "nvrx_gpu_error_2nd" in folders \
        and "torch2.15_gloo_cascade_8ranks" in folders
    for path in paths:
        raw = path.read_bytes()
        assert dumps(pickle.loads(raw)) == raw, path


def test_the_benchmark_dump_shares_one_dict_per_frame_as_torch_does():
    frames = frame_table(16)
    raw = make_dump(world=64, issued=50, entries=50, form="pickle", frames=frames)
    dump = load_pickle(raw)
    entries = dump["entries"]
    assert list(dump) == ["version", "pg_config", "nccl_version", "pg_status", "entries"]
    assert list(entries[0])[:2] == ["frames", "record_id"] and entries[0]["frames"] == frames
    assert entries[0]["frames"] is not entries[1]["frames"]           # a list per entry
    assert entries[0]["frames"][0] is entries[1]["frames"][0]         # one dict per frame
    assert entries[-1]["state"] == "started" and entries[-2]["state"] == "completed"
    assert dumps(dump) == raw


def test_what_torch_never_writes_in_a_dump_is_refused():
    with pytest.raises(TypeError, match="bytes"):
        dumps({"entries": [b"raw"]})
