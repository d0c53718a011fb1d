"""`collscope trace` on `collscope train --trace` of 4 gloo ranks: the DDP gradient all-reduces
with the bucket sizes train reports, efficiency per bucket against a `collscope bench` run, and
a planted straggler (rank 2 sleeps before each backward) found late in every step."""

from __future__ import annotations

import pytest

from tests.helpers import cli_env, read_records, run_cli

pytestmark = pytest.mark.dist
MODEL = ("--hidden", "64", "--layers", "2", "--heads", "2", "--seq-len", "16",
         "--batch-size", "2", "--bucket-cap-mb", "0.25", "--steps", "2", "--warmup", "2")


def test_trace_of_a_train_run_with_a_straggler(tmp_path):
    traces, train_out = tmp_path / "traces", tmp_path / "train.jsonl"
    proc = run_cli("train", "--nproc", "4", *MODEL, "--trace", str(traces), "--trace-steps",
                   "7", "--json",
                   str(train_out), timeout=240,
                   env=cli_env(COLLSCOPE_FAULT_INJECT="straggle@2:300"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    train = next(r for r in read_records(train_out) if r["kind"] == "train")
    bench_out = tmp_path / "bench.jsonl"
    proc = run_cli("bench", "all_reduce", "--nproc", "4", "-b", "256K", "-e", "1M", "-n", "3",
                   "-w", "1", "-c", "0", "--json", str(bench_out), timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]

    out = tmp_path / "trace.jsonl"
    proc = run_cli("trace", str(traces), "--baseline", str(bench_out), "--json", str(out),
                   timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = read_records(out)
    rows = [r for r in records if r["kind"] == "trace_collective" and r["rank"] == 0
            and r["collective"] == "all_reduce"]
    # One all-reduce per DDP bucket per step: the count and the bytes train reports.
    assert sum(r["calls_per_step"] for r in rows) == train["comm_messages_per_step"]
    assert sum(r["size_bytes"] * r["calls_per_step"] for r in rows) == \
        train["comm_bytes_per_step"]
    assert all(r["dtype"] == "float" and r["group_size"] == 4 for r in rows)
    assert all(r["timing"] == "cpu spans" for r in rows)
    # An efficiency for each bucket (inside the sweep interpolated, beyond it the nearest size).
    assert all(r["efficiency"] is not None and r["efficiency"] > 0 for r in rows)
    assert "efficiency" in proc.stdout and "%" in proc.stdout

    ranks = {r["rank"]: r for r in records if r["kind"] == "trace_rank"}
    assert sorted(ranks) == [0, 1, 2, 3]
    assert max(ranks, key=lambda r: ranks[r]["late_calls"]) == 2
    # Rank 2 holds up every step of the window (7 traced steps; the window is the 6 before
    # the last). Steps are the straggler test's trials (its calls are not independent): 6 of 6
    # among 4 ranks gives p = 4 x (1/4)^6 < 0.01 (Bonferroni), so rank 2 is named.
    assert ranks[2]["late_steps"] == 6 and all(ranks[r]["late_steps"] == 0 for r in (0, 1, 3))
    (straggler,) = [f for f in records if f["kind"] == "finding" and f["id"] == "straggler"]
    assert straggler["rank"] == 2
