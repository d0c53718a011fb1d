"""`collscope bench --nccl-json FILE` (issue 13's writer) against this reader: the file has the
structure nccl-tests' src/util.cu writes, and `collscope import` turns it into the same results
as `bench --json` (per-iteration statistics by the file's own definition)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from collscope.bench.per_rank import iteration_max
from collscope.collectives.table import COLLECTIVES
from collscope.records.logs import import_file
from collscope.stats.summary import iter_stats
from tests.helpers import read_records, run_cli
from tests.unit.parsers import nccl_tests_json_shape

COMPARED = ("collective", "size_bytes", "count", "dtype", "op", "root", "in_place",
            "world_size", "iters", "wrong")
TIMES = ("time_us", "algbw_gbs", "busbw_gbs")
# nccl-tests' per-iteration block states its statistics over `times_us`, the per-iteration
# maximum across processes; bench's --json combines each rank's own statistics with -a. The
# import keeps the file's definition, so these are checked against the per-rank series.
PER_ITER = {"time_us_p50": "p50", "time_us_p95": "p95", "time_us_min": "min",
            "time_us_max": "max"}


def test_bench_nccl_json_reads_back_as_the_bench_records(tmp_path) -> None:
    nccl, records = tmp_path / "bench.json", tmp_path / "bench.jsonl"
    proc = run_cli("bench", "--nproc", "2", "-b", "64K", "-e", "1M", "-n", "5",
                   "--nccl-json", str(nccl), "--json", str(records), timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert nccl_tests_json_shape.problems(json.loads(nccl.read_text()), per_iter=True) == []
    expected = [r for r in read_records(records) if r["kind"] == "result"]
    (run,) = import_file(nccl)
    got = [r.to_dict() for r in run.results]
    assert len(got) == len(expected) > 0
    for mine, theirs in zip(got, expected):
        assert {k: mine[k] for k in COMPARED} == {k: theirs[k] for k in COMPARED}
        for key in TIMES:       # %lf in the file: 6 decimals
            if theirs[key] is None:
                assert mine[key] is None, key
            else:
                assert mine[key] == pytest.approx(theirs[key], rel=1e-6, abs=1e-6), key
        stats = iter_stats(iteration_max(theirs["rank_times_us"]))
        for key, stat in PER_ITER.items():
            assert mine[key] == pytest.approx(getattr(stats, stat), rel=1e-6, abs=1e-6), key


def test_every_collectives_file_names_its_collective_for_importers(tmp_path) -> None:
    # -c 0: without verification the columns no longer tell all_gather from alltoall, and
    # sendrecv never could be told; only the program name says which collective a file holds.
    nccl = tmp_path / "x.json"
    proc = run_cli("bench", "all", "--nproc", "2", "-b", "1K", "-e", "2K", "-n", "2", "-w", "1",
                   "-c", "0", "--nccl-json", str(nccl), timeout=240)
    assert proc.returncode == 0, proc.stderr
    concluded = re.findall(r"^# Collective test concluded: (\w+)$", proc.stdout, re.M)
    written = re.findall(r"^# Wrote JSON output to (\S+)$", proc.stdout, re.M)
    assert sorted(concluded) == sorted(COLLECTIVES) and len(written) == len(concluded)
    for collective, path in zip(concluded, written):
        doc = json.loads(Path(path).read_text())
        assert doc["args"][:3] == [f"{collective}_perf", "-b", "1024"]
        assert doc["collscope_args"][:2] == ["collscope", "bench"]
        (run,) = import_file(path)
        assert {r.collective for r in run.results} == {collective}, path
        assert run.run.extra["collective_source"] == f"program name {collective}_perf"
        assert run.run.extra["info"]["collscope_command"].startswith("collscope bench all ")
        assert not any("guess" in w or "do not tell" in w for w in run.warnings), run.warnings
