"""bench --per-rank on 4 real gloo ranks: a planted 2 ms late arrival on rank 2 is named."""

from __future__ import annotations

import json
import re

import pytest

from collscope.testing.faults import FAULT_ENV
from tests.helpers import cli_env, read_records, run_cli

pytestmark = [pytest.mark.dist, pytest.mark.serial]   # names a rank by its planted delay

ARGS = ("bench", "all_reduce", "-b", "64K", "-e", "1M", "-n", "40", "-w", "3", "--nproc", "4",
        "--per-rank", "--timeout", "60")
ROW = re.compile(r"^#  all_reduce\s+(\d+)\s+in-place\s+(\S+)\s")


def _late_by_size(stdout: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in map(ROW.match, stdout.splitlines()) if m}


def test_planted_delay_names_rank_2_in_every_size(tmp_path):
    out, nccl = tmp_path / "b.jsonl", tmp_path / "ar.json"
    proc = run_cli(*ARGS, "--json", str(out), "--nccl-json", str(nccl),
                   env=cli_env(**{FAULT_ENV: "delay@2:2"}))
    assert proc.returncode == 0, proc.stderr
    late = _late_by_size(proc.stdout)
    assert sorted(late) == [65536, 131072, 262144, 524288, 1048576]
    assert set(late.values()) == {"2"}, proc.stdout
    assert "# Late-rank finding: rank 2 on " in proc.stdout
    records = read_records(out)
    results = [r for r in records if r["kind"] == "result"]
    (found,) = [r for r in records if r["kind"] == "finding"]
    assert (found["id"], found["level"], found["rank"]) == ("bench.late-rank", "warn", 2)
    assert found["at_stake_ms"] > 1.0 and "binomial" in found["test"]
    for result in results:               # rank 0's records keep every rank's series, <= -n
        assert len(result["rank_op_us"]) == 4 and len(result["rank_times_us"]) == 4
        assert all(len(series) == 40 for series in result["rank_op_us"])
    doc = json.loads(nccl.read_text())
    assert doc["version"] == 3 and len(doc["results"]) == 5
    per_iter = doc["results"][0]["in_place_per_iter"]
    assert len(per_iter["per_process_max_times_us"]) == 4 and len(per_iter["times_us"]) == 40


def test_without_a_delay_no_rank_is_named():
    proc = run_cli(*ARGS)
    assert proc.returncode == 0, proc.stderr
    late = _late_by_size(proc.stdout)
    assert len(late) == 5 and set(late.values()) == {"none"}, proc.stdout
    assert "# Late-rank finding: none" in proc.stdout
