"""`collscope bench --nccl-json FILE` (issue 13's writer) against this reader: the file has the
structure nccl-tests' src/util.cu writes, and `collscope import` turns it into the same results
as `bench --json` (per-iteration statistics by the file's own definition)."""

from __future__ import annotations

import json

import pytest

from collscope.bench.per_rank import iteration_max
from collscope.bench.stats import iter_stats
from collscope.report.importer import import_file
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
