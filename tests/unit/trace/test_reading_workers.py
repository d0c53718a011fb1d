"""How many processes read the ranks: as many as --memory-mib holds (trace/analyze.py)."""

from __future__ import annotations

import os

import pytest

from collscope.config_flags import ConfigError
from collscope.trace.analyze import reading_workers
from collscope.trace.config import DEFAULT_MEMORY_MIB, TraceConfig


def traces(tmp_path, count: int, mib: int) -> list:
    files = []
    for rank in range(count):
        path = tmp_path / f"rank{rank}.json"
        with path.open("wb") as file:          # sparse: the size is all that is read
            file.truncate(mib << 20)
        files.append(path)
    return files


def test_the_budget_decides_how_many_ranks_are_read_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    files = traces(tmp_path, 8, 300)           # each ~150 + 0.35 x 300 = 255 MiB
    assert reading_workers(files, DEFAULT_MEMORY_MIB) == 3      # (1024 - 100) // 255
    assert reading_workers(files, 4096) == 8                    # one per file at most
    assert reading_workers(files, 300) == 1                     # one at a time, in-process
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert reading_workers(files, 4096) == 2                    # one per core at most


def test_small_jobs_are_read_in_one_process(tmp_path):
    assert reading_workers(traces(tmp_path, 4, 4), 1 << 20) == 1


@pytest.mark.parametrize("bad", [0, -5, True, 2.5])
def test_a_budget_that_is_not_a_positive_whole_number_is_refused(bad):
    with pytest.raises(ConfigError, match="--memory-mib"):
        TraceConfig(paths=["t.json"], memory_mib=bad)
