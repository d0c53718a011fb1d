"""The one Flight Recorder entry model that watch and hang both read: an entry of the real gloo
dump decoded, its op and peer from the profiling name, done-ness, and pg_config's ranks."""

from __future__ import annotations

import json

import msgspec
import pytest

from collscope.parsers.flight_recorder import FlightEntry, group_ranks, is_done, split_name
from tests.conftest import fixture_path


def test_an_entry_of_a_real_dump_reads_as_its_dict_does():
    dump = json.loads(fixture_path("own", "watch", "fr_nccl_timed.json").read_bytes())
    for raw in dump["entries"]:
        entry = msgspec.json.decode(json.dumps(raw), type=FlightEntry)
        assert entry.group == raw["process_group"][0]
        assert entry.done == (raw["retired"] or raw["state"] == "completed")
        assert entry.timed_ms == raw.get("duration_ms")
        for key in ("input_sizes", "output_dtypes", "duration_ms", "frames", "op_id"):
            assert (key in entry) == (key in raw) and entry.get(key) == raw.get(key)
    with pytest.raises(KeyError):
        entry["frames"]                          # the JSON dump carries no frames


@pytest.mark.parametrize(("name", "expected"), [
    ("nccl:all_reduce", ("nccl", "all_reduce", None)),
    ("gloo:_allgather_base", ("gloo", "_allgather_base", None)),
    ("nccl:send 0->1", ("nccl", "send", 1)),
    ("nccl:recv 1<-0", ("nccl", "recv", 0)),
    ("broadcast", ("", "broadcast", None)),
])
def test_profiling_names_give_backend_op_and_peer(name, expected):
    assert split_name(name) == expected


def test_done_and_ranks():
    assert is_done(True, "scheduled") and is_done(False, "completed")
    assert not is_done(False, "started")
    assert group_ranks("[3, 1, 2]") == (1, 2, 3) == group_ranks([2, 3, 1])
    assert group_ranks("[]") == () == group_ranks("not a list")
