"""Real gloo ranks, spawned the way users spawn them, verifying every collective."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from collscope.collectives.table import COLLECTIVES
from tests.helpers import (
    REPO,
    cli_env,
    free_port,
    local_rank_pids,
    read_records,
    run_cli,
    two_torchrun_agents,
)

pytestmark = pytest.mark.dist


@pytest.mark.parametrize("world", [2, 3, 4])
def test_every_collective_placement_and_dtype_verifies(world, tmp_path):
    out = tmp_path / "bench.jsonl"
    proc = run_cli("bench", "all", "-d", "float,int32", "--op", "sum,prod,min,max", "-b", "8",
                   "-e", "4K", "-f", "8", "-n", "2", "-w", "1", "--nproc", str(world),
                   "--json", str(out), "--timeout", "60")
    assert proc.returncode == 0, proc.stderr
    run, *results = read_records(out)
    assert run["kind"] == "run" and run["world_size"] == world and run["backend"] == "gloo"
    assert len(run["devices"]) == world and run["nodes"] == 1
    seen = set()
    for r in results:
        spec = COLLECTIVES[r["collective"]]
        seen.add((r["collective"], r["in_place"], r["dtype"]))
        if r["in_place"] and not spec.verifies_in_place:
            assert r["wrong"] is None  # nccl-tests prints N/A here too
        else:
            assert r["wrong"] == 0, r
        assert r["busbw_gbs"] == pytest.approx(r["algbw_gbs"] * spec.bus_factor(world))
        assert r["algbw_gbs"] == pytest.approx(r["size_bytes"] / r["time_us"] / 1e3)
        assert r["time_us_min"] <= r["time_us_p50"] <= r["time_us_max"]
        assert r["world_size"] == world and r["iters"] == 2
    expected = {(name, in_place, dtype) for name, spec in COLLECTIVES.items()
                for in_place in ([False, True] if spec.out_of_place else [True])
                for dtype in ("float", "int32")}
    assert seen == expected
    assert "# Out of bounds values : 0 OK" in proc.stdout


def test_avg_and_narrow_dtypes_verify(tmp_path):
    out = tmp_path / "avg.jsonl"
    proc = run_cli("bench", "all_reduce", "reduce_scatter", "reduce", "--op", "avg,sum",
                   "-d", "bfloat16,half,double", "-e", "1K", "-f", "16", "-n", "1", "-w", "0",
                   "--nproc", "3", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    results = read_records(out)[1:]
    assert {r["op"] for r in results} == {"avg", "sum"}
    assert all(r["wrong"] == 0 for r in results)


def test_corrupted_result_is_counted_and_exits_3(tmp_path):
    out = tmp_path / "bad.jsonl"
    proc = run_cli("bench", "all_gather", "-e", "1K", "-f", "32", "-n", "1", "-w", "0",
                   "--json", str(out), env=cli_env(COLLSCOPE_FAULT_INJECT="corrupt@1"))
    assert proc.returncode == 3, proc.stderr
    results = read_records(out)[1:]
    assert results and all(r["wrong"] == 1 for r in results)  # one element on rank 1
    assert "FAILED" in proc.stdout


def _rank_pids(parent: subprocess.Popen, ranks: int) -> dict[int, int]:
    """Rank -> pid once all ``ranks`` local ranks have started."""
    deadline = time.monotonic() + 60
    while len(pids := local_rank_pids(parent.pid)) < ranks and time.monotonic() < deadline:
        time.sleep(0.05)
    return dict(enumerate(pids))


@pytest.mark.serial   # bounds how soon the ranks exit
def test_killed_rank_ends_every_rank_and_keeps_results(tmp_path):
    out = tmp_path / "killed.jsonl"
    timeout = 20
    parent = subprocess.Popen(
        [sys.executable, "-m", "collscope", "bench", "-b", "256K", "-e", "512M", "-i", "256K",
         "-n", "3", "-w", "1", "--nproc", "3", "--timeout", str(timeout), "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 4:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the sweep never produced 3 results")
        os.kill(_rank_pids(parent, 3)[1], signal.SIGKILL)
        killed_at = time.monotonic()
        stdout, stderr = parent.communicate(timeout=timeout + 30)
        elapsed = time.monotonic() - killed_at
    finally:
        parent.kill()
    assert parent.returncode == 1, stderr
    assert elapsed < timeout, f"ranks took {elapsed:.1f} s to exit after a peer died"
    assert "killing it" not in stderr  # survivors exited by themselves
    assert re.search(r"rank [02]: .*all_reduce \d+ B float sum \(in-place\) failed", stderr)
    records = read_records(out)  # every line is complete JSON
    results = records[1:]
    assert len(results) >= 3 and all(r["wrong"] == 0 for r in results)
    printed = [line for line in stdout.splitlines() if line.strip() and line[0] == " "]
    assert len(printed) == len(results)


@pytest.mark.serial   # bounds how soon the ranks exit
def test_hung_rank_times_out_on_every_rank_with_the_collective_named(tmp_path):
    started = time.monotonic()
    proc = run_cli("bench", "-e", "1M", "-n", "2", "-w", "1", "--timeout", "5",
                   env=cli_env(COLLSCOPE_FAULT_INJECT="hang@1:2"), timeout=90)
    assert proc.returncode == 1
    assert time.monotonic() - started < 60
    assert "rank 1: no progress for 5 s while waiting in all_reduce 32 B float sum" \
        in proc.stderr
    # Rank 0 waits in the same collective: gloo's own 5 s timeout or rank 0's watchdog (also
    # 5 s without progress) ends it, whichever comes first on a loaded host; both name it.
    assert ("rank 0: all_reduce 32 B float sum (in-place) failed" in proc.stderr or
            "rank 0: no progress for 5 s while waiting in all_reduce 32 B float sum (in-place)"
            in proc.stderr), proc.stderr
    assert "killing it" not in proc.stderr
    assert "Traceback" not in proc.stderr


def test_library_run_inside_a_user_initialised_group(tmp_path):
    script = tmp_path / "user_script.py"
    # Each rank reports in its own file: torchrun merges the ranks' stdout without line
    # boundaries, so printed lines can run together.
    script.write_text(
        "import json, sys, torch.distributed as dist\n"
        "from collscope.bench import BenchConfig, run\n"
        "dist.init_process_group('gloo')\n"
        "results = run(BenchConfig(collectives=['all_reduce', 'broadcast'], max_bytes=4096,"
        " min_bytes=1024, iters=2, warmup_iters=1))\n"
        "assert dist.is_initialized()\n"
        f"open(f'{tmp_path}/rank{{dist.get_rank()}}.json', 'w').write("
        "json.dumps([dist.get_rank(), len(results), [r.wrong for r in results]]))\n"
        "dist.destroy_process_group()\n")
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), str(script)],
        capture_output=True, text=True, timeout=120, env=cli_env(), cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    reports = sorted(path.read_text() for path in tmp_path.glob("rank*.json"))
    assert reports == ["[0, 6, [0, 0, 0, 0, 0, 0]]", "[1, 6, [0, 0, 0, 0, 0, 0]]"]


def test_two_torchrun_agents_form_a_two_node_job(tmp_path):
    results = two_torchrun_agents(["collscope", "bench", "-e", "1K", "-f", "16", "-n", "1",
                                   "-w", "0", "--json", str(tmp_path / "node{agent}.jsonl")])
    assert [code for code, _, _ in results] == [0, 0], results
    run = next(r for path in tmp_path.glob("node*.jsonl") for r in read_records(path)
               if r["kind"] == "run")
    assert run["launcher"] == "torchrun"
    assert (run["world_size"], run["nodes"], run["ranks_per_node"]) == (2, 2, 1)
    assert sorted(d["node"] for d in run["devices"]) == [0, 1]


@pytest.mark.serial   # waits for results, then times the exit
def test_ctrl_c_ends_every_rank(tmp_path):
    out = tmp_path / "interrupted.jsonl"
    parent = subprocess.Popen(
        [sys.executable, "-m", "collscope", "bench", "-b", "256K", "-e", "512M", "-i", "256K",
         "-n", "3", "-w", "1", "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        while not (out.exists() and len(out.read_text().splitlines()) >= 3):
            assert time.monotonic() < deadline, "the sweep never produced 2 results"
            time.sleep(0.1)
        ranks = _rank_pids(parent, 2)
        assert len(ranks) == 2
        parent.send_signal(signal.SIGINT)
        _, stderr = parent.communicate(timeout=30)
    finally:
        parent.kill()
    assert parent.returncode == 130
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
                   for pid in ranks.values())


@pytest.mark.serial   # judges a time budget
def test_adaptive_iterations_stop_on_precision_or_budget(tmp_path):
    loose, tight = tmp_path / "loose.jsonl", tmp_path / "tight.jsonl"
    proc = run_cli("bench", "-b", "1K", "-e", "4K", "-f", "4", "-n", "10", "-w", "1",
                   "--target-precision", "1000", "--json", str(loose))
    assert proc.returncode == 0, proc.stderr
    assert all(r["iters"] == 10 for r in read_records(loose)[1:])  # precise after one batch
    started = time.monotonic()
    proc = run_cli("bench", "-b", "1K", "-e", "4K", "-f", "4", "-n", "10", "-w", "1",
                   "--target-precision", "0.000001", "--time-budget", "1", "--json",
                   str(tight))
    assert proc.returncode == 0, proc.stderr
    results = read_records(tight)[1:]
    # The budget ends each size; iterations come in whole batches of -n.
    assert all(r["iters"] > 10 and r["iters"] % 10 == 0 for r in results)
    assert time.monotonic() - started < 60
    assert "adaptive loop" in read_records(tight)[0]["timing"]


def test_csv_and_average_modes(tmp_path):
    csv_path, json_path = tmp_path / "r.csv", tmp_path / "r.jsonl"
    proc = run_cli("bench", "reduce", "broadcast", "-r", "1", "-a", "2", "-e", "256", "-f",
                   "8", "-n", "3", "-w", "0", "--csv", str(csv_path), "--json", str(json_path))
    assert proc.returncode == 0, proc.stderr
    import csv

    rows = list(csv.DictReader(csv_path.open()))
    records = read_records(json_path)[1:]
    assert len(rows) == len(records) > 0
    assert {row["average"] for row in rows} == {"min"}
    assert {int(row["root"]) for row in rows} == {1}
    assert [float(row["time_us"]) for row in rows] == [r["time_us"] for r in records]


def test_check_of_a_256mib_all_gather_adds_at_most_1_5x_the_message(tmp_path):
    """The check works in bounded chunks: its peak memory does not grow with the message."""
    script = Path(__file__).parent / "scripts" / "check_memory.py"
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
                           "2", "--master-port", str(free_port()), str(script), str(tmp_path)],
                          capture_output=True, text=True, timeout=180, env=cli_env(), cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for rank in range(2):
        measured = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert measured["wrong"] == 0
        assert 0 < measured["added"] <= 1.5 * measured["message"], measured
