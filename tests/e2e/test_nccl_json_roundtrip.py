"""`collscope bench --nccl-json FILE` (issue 13's writer) against this reader: the file has the
structure nccl-tests' src/util.cu writes, and `collscope import` turns it into the same results
as `bench --json`. Skips until the bench command has the flag."""

from __future__ import annotations

import json

import pytest

from collscope.report.importer import import_file
from tests.helpers import read_records, run_cli
from tests.unit.parsers import nccl_tests_json_shape

COMPARED = ("collective", "size_bytes", "count", "dtype", "op", "root", "in_place",
            "world_size", "iters", "wrong")
TIMES = ("time_us", "algbw_gbs", "busbw_gbs", "time_us_p50", "time_us_p95", "time_us_min",
         "time_us_max")


def test_bench_nccl_json_reads_back_as_the_bench_records(tmp_path) -> None:
    if "--nccl-json" not in run_cli("bench", "--help").stdout:
        pytest.skip("collscope bench --nccl-json is not in this tree yet (issue 13)")
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
