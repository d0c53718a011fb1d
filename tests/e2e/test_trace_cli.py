"""`collscope trace` from the command line on real fixture traces: tables, --json records,
no-communication traces and bad input (exit 2, one line naming the file)."""

from __future__ import annotations

import gzip
import json

from tests.conftest import fixture_path
from tests.helpers import read_records, run_cli, usage_error

NCCL = "HolisticTraceAnalysis__nccl_data_rank0of2.json.gz"


def test_one_rank_table_and_json_records(tmp_path):
    out = tmp_path / "trace.jsonl"
    proc = run_cli("trace", str(fixture_path("traces", NCCL)), "--json", str(out), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "all_reduce" in proc.stdout and "RING/LL" in proc.stdout
    assert "14.76" in proc.stdout      # the rank's overlap over HTA's window
    run, *records = read_records(out)
    assert run["kind"] == "run" and run["command"] == "trace" and run["world_size"] == 2
    kinds = {r["kind"] for r in records}
    assert {"trace_collective", "trace_step", "trace_rank"} <= kinds
    rank = next(r for r in records if r["kind"] == "trace_rank")
    assert rank["rank"] == 0 and abs(rank["overlap_percent"] - 14.76) < 0.01
    rows = [r for r in records if r["kind"] == "trace_collective"]
    for field in ("rank", "collective", "dtype", "size_bytes", "group_size", "calls",
                  "kernel_us_p50", "busbw_gbs"):
        assert all(field in r for r in rows)
    steps = [r for r in records if r["kind"] == "trace_step"]
    assert [s["step"] for s in steps] == [4, 5]


def test_json_to_stdout_carries_nothing_else():
    proc = run_cli("trace", str(fixture_path("traces", NCCL)), "--json", "-", timeout=60)
    assert proc.returncode == 0, proc.stderr
    kinds = [json.loads(line)["kind"] for line in proc.stdout.splitlines()]
    assert kinds[0] == "run" and "trace_rank" in kinds


def test_world_size_one_says_no_communication():
    proc = run_cli("trace", str(fixture_path(
        "traces", "HolisticTraceAnalysis__ns_resolution_rank0of1.pt.trace.json.gz")), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "no communication in these traces (world size 1)" in proc.stdout


def test_bad_inputs_exit_2_naming_the_file(tmp_path):
    not_trace = tmp_path / "notes.json"
    not_trace.write_text('{"hello": 1}')
    usage_error(run_cli("trace", str(not_trace)), str(not_trace), "traceEvents")
    text = tmp_path / "log.json"
    text.write_text("this is not json")
    usage_error(run_cli("trace", str(text)), str(text), "not valid JSON")
    truncated = tmp_path / "cut.json.gz"
    truncated.write_bytes(fixture_path("traces", NCCL).read_bytes()[:20000])
    usage_error(run_cli("trace", str(truncated)), str(truncated), "truncated")
    usage_error(run_cli("trace", str(tmp_path / "absent.json")), "absent.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    usage_error(run_cli("trace", str(empty)), str(empty), "no .json")
    usage_error(run_cli("trace", str(fixture_path("traces", NCCL)), "--steps", "5"),
                "--steps")
    usage_error(run_cli("trace", str(fixture_path("traces", NCCL)), "--steps", "0:2"),
                "--steps", "selects no step", "ProfilerSteps 4 to 6")


def test_ranks_of_different_jobs_are_refused(tmp_path):
    # Rank 0 of a 128-rank job and rank 1 of a 2-rank job.
    other = fixture_path("traces", "HolisticTraceAnalysis__df_index_resolver_rank1of2.json.gz")
    line = usage_error(run_cli("trace", str(fixture_path(
        "traces", "HolisticTraceAnalysis__sampled_rank-0of128.json.gz")), str(other)),
        "different job")
    assert "df_index_resolver" in line or "sampled_rank-0of128" in line
    # The same job's trace twice under two names: the same rank twice.
    copy = tmp_path / "again.json.gz"
    copy.write_bytes(gzip.compress(gzip.decompress(fixture_path("traces", NCCL).read_bytes())))
    usage_error(run_cli("trace", str(fixture_path("traces", NCCL)), str(copy)), "rank 0 again")


def test_two_ranks_of_one_job_are_matched():
    paths = [str(fixture_path("traces", f"HolisticTraceAnalysis__sampled_rank-{r}of128.json.gz"))
             for r in (0, 1)]
    proc = run_cli("trace", *paths, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "# across ranks: 3 calls matched" in proc.stdout
    assert "4 calls not on every rank" in proc.stdout
    # Rank 1's trace starts one alltoall later (tests/unit/trace/test_shift.py derives it).
    out = " ".join(proc.stdout.split())
    assert ("# matching rank 1 vs rank 0 (ends +166 us from rank 0's, MAD 194 us): alltoall "
            "(group -, size ?): shift +1, 1 pair(s)") in out
    assert "1 pair(s) at those shifts left unmatched" in out


def test_efficiency_against_an_rccl_tests_log():
    """The MI300X trace (8 ranks, bf16 all-reduces) against rccl-tests all_reduce on 8 MI300X:
    17632384 B lies between the log's 16777216 B (busbw 195.85 out-of-place, 187.83 in-place)
    and 33554432 B (238.45, 226.78) rows; the best placement, linear in log2-size:
    195.85 + log2(17632384 / 16777216) x (238.45 - 195.85) = 198.90 GB/s."""
    import math

    trace = fixture_path("traces", "TraceLens__mi300x_resnet_act_checkpoint_rank0of8.json.gz")
    log = fixture_path("nccl-tests-logs", "mi300x_8gpu_allreduce_rccl_k8s.txt")
    proc = run_cli("trace", str(trace), "--baseline", str(log), "--json", "-", timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    row = next(r for r in rows if r["kind"] == "trace_collective"
               and r["size_bytes"] == 17632384)
    expected = 195.85 + math.log2(17632384 / 16777216) * (238.45 - 195.85)
    assert abs(row["baseline_busbw_gbs"] - expected) < 1e-6
    busbw = 17632384 / (row["kernel_us_p50"] * 1e3) * 2 * 7 / 8
    assert abs(row["busbw_gbs"] - busbw) < 1e-9
    assert abs(row["efficiency"] - busbw / expected) < 1e-9
    broadcast = next(r for r in rows if r["kind"] == "trace_collective"
                     and r["collective"] == "broadcast")
    assert broadcast["efficiency"] is None and "no 8-rank broadcast" in broadcast["baseline"]
