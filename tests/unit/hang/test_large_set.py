"""A large synthetic dump set (512 ranks, NCCL-shaped, with stack frames): the rank that never
entered the last collective is named, every other rank waits on it, the analysis keeps a few
entries per rank (not the ring buffers), and its cost grows with the ranks, not faster."""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import pytest

from collscope.hang import Cause, analyse_paths

FRAMES = [{"name": "all_reduce", "line": 3245, "filename": "/opt/venv/lib/python3.11/"
           "site-packages/torch/distributed/distributed_c10d.py"},
          {"name": "step", "line": 88, "filename": "/opt/job/train.py"}]


def _dump(world: int, issued: int, entries: int) -> bytes:
    ring = [{"record_id": i, "pg_id": 0, "process_group": ("0", "default_pg"),
             "collective_seq_id": i + 1, "p2p_seq_id": 0, "op_id": i + 1,
             "profiling_name": "nccl:all_reduce", "input_sizes": [[1024]],
             "input_dtypes": ["Float"], "output_sizes": [[1024]], "output_dtypes": ["Float"],
             "state": "completed" if i < entries - 1 else "started", "retired": i < entries - 1,
             "time_discovered_started_ns": 1 + i, "duration_ms": 0.5,
             "frames": list(FRAMES)} for i in range(issued)]
    return pickle.dumps({"version": "2.10", "nccl_version": "2.27.3", "entries": ring,
                         "pg_config": {"0": {"name": "0", "desc": "default_pg",
                                             "ranks": str(list(range(world)))}},
                         "pg_status": {"0": {"last_enqueued_collective": issued,
                                             "last_completed_collective": entries - 1}}},
                        protocol=2)


def _dump_set(folder: Path, world: int, entries: int) -> Path:
    """Every rank but world // 2 issued ``entries`` all_reduce; that one stopped one short.
    The healthy ranks' files are hard links to one (the same bytes, read once each)."""
    folder.mkdir()
    healthy = folder / "nccl_trace_rank_0"
    healthy.write_bytes(_dump(world, entries, entries))
    for rank in range(1, world):
        if rank == world // 2:
            (folder / f"nccl_trace_rank_{rank}").write_bytes(_dump(world, entries - 1, entries))
        else:
            os.link(healthy, folder / f"nccl_trace_rank_{rank}")
    return folder


def test_512_ranks_name_the_one_that_never_entered_and_keep_a_few_entries_each(tmp_path):
    analysis = analyse_paths([_dump_set(tmp_path / "set", 512, 100)], workers=2)
    verdict = analysis.verdict
    assert verdict.culprit_ranks == [256] and verdict.cause == Cause.NOT_ENTERED
    assert verdict.seq == 100 and verdict.collective == "all_reduce"
    assert verdict.waiting_ranks == [r for r in range(512) if r != 256]
    assert len(analysis.dumps) == 512
    assert max(len(d.entries) for d in analysis.dumps) <= 6        # of 100 in each buffer
    assert {id(d.groups["0"]) for d in analysis.dumps} == {id(analysis.dumps[0].groups["0"])}


@pytest.mark.serial   # judges CPU time
def test_the_cost_grows_with_the_ranks_not_faster(tmp_path):
    def cpu_s(world: int) -> float:
        folder = _dump_set(tmp_path / str(world), world, 20)
        started = time.process_time()
        assert analyse_paths([folder], workers=1).verdict.culprit_ranks == [world // 2]
        return time.process_time() - started

    cpu_s(32)                                    # imports and caches, not measured
    small, large = cpu_s(128), cpu_s(1024)
    # 8x the ranks: 8x the CPU when the cost is linear (measured 8.1x), 64x when quadratic
    # (each rank's world list parsed and scanned: 34x before reading was streamed).
    assert large < 16 * small, f"128 ranks {small:.2f} s, 1024 ranks {large:.2f} s"
