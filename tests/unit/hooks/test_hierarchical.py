"""The pipelined hierarchical all-reduce: its chunking, and its schedule against
torch.distributed-shaped fakes (async calls that return a work handle with ``wait()``).

Results are checked on real gloo ranks in tests/dist/test_hierarchical.py; here the order of
issues and waits, which decides what overlaps, is checked exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from collscope.hooks import hierarchical
from collscope.hooks.hierarchical import HierarchicalAllReduce, chunk_bounds


@given(numel=st.integers(1, 20_000), ranks=st.integers(1, 8), chunk=st.integers(0, 20_000))
def test_chunks_cover_the_message_and_split_evenly_but_the_last(numel, ranks, chunk):
    bounds = chunk_bounds(numel, ranks, chunk)
    ends = [start + length for start, length in bounds]
    assert [start for start, _ in bounds] == [0, *ends[:-1]]      # contiguous
    assert ends[-1] == numel
    largest = max(ranks, chunk // ranks * ranks)
    count, step = len(bounds), bounds[0][1]
    assert count == -(-numel // largest)                  # the fewest chunks that fit
    assert all(length == step for _, length in bounds[:-1])
    assert step % ranks == 0 or count == 1
    assert 0 < bounds[-1][1] <= step <= largest
    # The smallest such step for that count: the last chunk is as large as it can be.
    assert count == 1 or (step - ranks) * count < numel


def test_one_chunk_when_the_chunk_holds_the_message():
    assert chunk_bounds(4099, 2, 1 << 20) == [(0, 4099)]


@dataclass
class Recorder:
    """Issues and waits, as (verb, stage, chunk): stage rs/ar/ag, verb issue/wait."""

    shards: dict[int, int] = field(default_factory=dict)   # shard data_ptr -> chunk
    log: list[tuple[str, str, int]] = field(default_factory=list)

    def call(self, stage: str, shard: torch.Tensor, async_op: bool) -> FakeWork:
        assert async_op, f"{stage} issued synchronously"
        chunk = self.shards[shard.data_ptr()]
        self.log.append(("issue", stage, chunk))
        return FakeWork(self, stage, chunk)

    def at(self, entry: tuple[str, str, int]) -> int:
        return self.log.index(entry)


@dataclass
class FakeWork:
    recorder: Recorder
    stage: str
    chunk: int

    def wait(self) -> bool:
        self.recorder.log.append(("wait", self.stage, self.chunk))
        return True


class FakeMesh:
    """DeviceMesh's get_group / size, for 2 nodes of ``ranks`` ranks."""

    def __init__(self, ranks: int) -> None:
        self.ranks = ranks

    def get_group(self, name: str) -> str:
        return name

    def size(self, dim: int | None = None) -> int:
        return self.ranks if dim == 1 else 2 * self.ranks


@pytest.fixture
def schedule(monkeypatch):
    """Run one 10-chunk all-reduce on the fakes; its log."""
    reducer = HierarchicalAllReduce(FakeMesh(2), 1000, torch.float32, torch.device("cpu"),
                                    chunk_bytes=400)
    recorder = Recorder({shard.data_ptr(): i for i, shard in enumerate(reducer.shards)})

    def reduce_scatter(output, input, op, group, async_op=False):
        assert group == "local"
        return recorder.call("rs", output, async_op)

    def all_reduce(tensor, op, group, async_op=False):
        assert group == "node"
        return recorder.call("ar", tensor, async_op)

    def all_gather(output, input, group, async_op=False):
        assert group == "local"
        return recorder.call("ag", input, async_op)

    monkeypatch.setattr(hierarchical, "_reduce_scatter", reduce_scatter)
    monkeypatch.setattr(hierarchical, "_all_gather", all_gather)
    monkeypatch.setattr(hierarchical.dist, "all_reduce", all_reduce)
    reducer(torch.zeros(1000), "sum")
    return recorder


def test_every_stage_starts_after_its_input_is_ready(schedule):
    chunks = 10
    assert len(schedule.log) == 6 * chunks
    for i in range(chunks):
        assert schedule.at(("wait", "rs", i)) < schedule.at(("issue", "ar", i))
        assert schedule.at(("wait", "ar", i)) < schedule.at(("issue", "ag", i))
    # The call returns only after every all-gather is done.
    assert {entry for entry in schedule.log[-chunks:]} == {("wait", "ag", i)
                                                           for i in range(chunks)}


def test_intra_node_steps_run_beside_the_inter_node_step(schedule):
    for i in range(10):
        inter_done = schedule.at(("wait", "ar", i))
        # While chunk i is across: the next chunk is already queued across (the link never
        # waits for the host), the one after it is being reduce-scattered, and chunk i-1 is
        # being gathered.
        if i + 1 < 10:
            assert schedule.at(("issue", "ar", i + 1)) < inter_done
        if i + 2 < 10:
            assert schedule.at(("issue", "rs", i + 2)) < inter_done
        if i > 0:
            assert schedule.at(("issue", "ag", i - 1)) < inter_done
