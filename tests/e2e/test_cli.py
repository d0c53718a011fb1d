"""The CLI as a user meets it: help, version, bad input, and the default run."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from collscope import __version__
from tests.helpers import REPO, cli_env, run_cli, usage_error, usage_error_in_process


@pytest.mark.serial   # bounds the wall time
def test_help_does_not_import_torch_and_is_fast():
    code = ("import sys, time; t = time.perf_counter(); from collscope.cli import build_parser; "
            "build_parser().format_help(); "
            "print('torch' in sys.modules, time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=cli_env(), cwd=REPO, check=True).stdout.split()
    assert out[0] == "False"
    assert float(out[1]) < 1.0


@pytest.mark.serial   # bounds the wall time
def test_help_lists_examples_and_exit_codes():
    started = time.perf_counter()
    top = run_cli("--help")
    assert top.returncode == 0 and "bench" in top.stdout and "exit codes" in top.stdout
    bench = run_cli("bench", "--help")
    assert bench.returncode == 0
    for text in ("torchrun", "srun", "mpirun", "--target-precision", "busbw", "examples"):
        assert text in bench.stdout
    assert time.perf_counter() - started < 10


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"collscope {__version__}"


@pytest.mark.parametrize("args, flag", [
    (["bench", "-b", "12Q"], "-b/--min-bytes"),
    (["bench", "-e", "lots"], "-e/--max-bytes"),
    (["bench", "-b", "1M", "-e", "1K"], "-b/--min-bytes"),
    (["bench", "allgatherv"], "COLLECTIVE"),
    (["bench", "-d", "float8"], "-d/--dtype"),
    (["bench", "--op", "xor"], "--op"),
    (["bench", "-n", "0"], "-n/--iters"),
    (["bench", "-n", "many"], "-n/--iters"),
    (["bench", "-a", "5"], "-a/--average"),
    (["bench", "--backend", "tcp"], "--backend"),
    (["bench", "--backend", "nccl"], "--backend"),
    (["bench", "--nproc", "0"], "--nproc"),
    (["bench", "-r", "2"], "-r/--root"),
    (["bench", "--op", "avg", "-d", "int32"], "--op"),
    (["bench", "all_reduce", "--out-of-place"], "--out-of-place"),
    (["bench", "--in-place", "--out-of-place"], "--out-of-place"),
    (["bench", "--target-precision", "-0.1"], "--target-precision"),
    (["bench", "--json", "/nonexistent/x.jsonl"], "--json"),
    (["bench", "--csv", "/nonexistent/x.csv"], "--csv"),
    (["bench", "--nccl-json", "/nonexistent/x.json"], "--nccl-json"),
    (["train", "--json", "/nonexistent/x.jsonl"], "--json"),
    (["overlap", "--json", "/nonexistent/x.jsonl"], "--json"),
    (["links", "--json", "/nonexistent/x.jsonl"], "--json"),
    (["frobnicate"], "COMMAND"),
])
def test_bad_input_exits_2_with_one_line(args, flag):
    proc = run_cli(*args, timeout=60)
    usage_error(proc, flag)
    assert proc.stdout == ""


def test_default_bench_runs_two_gloo_ranks_and_verifies():
    proc = run_cli("bench", timeout=240)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    rows = [line.split() for line in lines if line.startswith(" ")]
    sizes = [int(r[0]) for r in rows]
    assert sizes == [8 << i for i in range(24)]  # 8 B .. 64 MiB
    assert all(r[-1] == "0" for r in rows)       # every #wrong 0
    assert "# Out of bounds values : 0 OK" in lines
    assert sum("Rank" in line and "device" in line for line in lines) == 2
    assert any(line.startswith("# Timing: perf_counter") for line in lines)


def test_out_of_place_skips_collectives_that_exist_only_in_place():
    """all_reduce has no out-of-place form: it is skipped with a note, all_gather still runs."""
    proc = run_cli("bench", "all_reduce", "all_gather", "--out-of-place", "--nproc", "2",
                   "-b", "1K", "-e", "4K", "-n", "2", "-w", "1", timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "# Skipped all_reduce: only in place in torch.distributed, and --out-of-place " \
           "leaves no placement to run" in lines
    assert "# Collective test starting: all_gather" in lines
    assert "# Collective test starting: all_reduce" not in lines
    rows = [line.split() for line in lines if line.startswith(" ")]
    assert [int(r[0]) for r in rows] == [1024, 2048, 4096]
    assert all(r[8] == "0" and r[9:] == ["N/A"] * 4 for r in rows)   # in-place not run


def test_output_paths_are_checked_before_ranks_start(tmp_path):
    """The shared check: a folder given as FILE is refused, "-" (stdout) and a new file in a
    writable folder pass."""
    from collscope.errors import UsageError
    from collscope.records.jsonl import check_writable

    with pytest.raises(UsageError, match="--csv: cannot write .* it is a folder"):
        check_writable("--csv", str(tmp_path))
    check_writable("--json", "-")
    check_writable("--nccl-json", str(tmp_path / "new.json"))
    check_writable("--json", None)


@pytest.mark.parametrize("argv, flag", [
    (["links", "--nproc", "2", "--json", "/nonexistent-dir/x.jsonl"], "--json"),
    (["overlap", "--nproc", "2", "--json", "/nonexistent-dir/x.jsonl"], "--json"),
    (["tune", "--space", "NCCL_ALGO=Ring", "--env-out", "/nonexistent-dir/best.env"],
     "--env-out"),
    (["tune", "--space", "NCCL_ALGO=Ring", "--tuner-csv", "/"], "--tuner-csv"),
])
def test_every_measuring_command_refuses_an_unwritable_output_before_it_starts(
        capsys, argv, flag):
    # Each ended in a traceback after the whole measurement before.
    assert usage_error_in_process(capsys, argv).startswith(f"collscope {argv[0]}: {flag}: "
                                                           "cannot write")


def test_trace_refuses_an_unwritable_json_before_analysing(capsys):
    from tests.conftest import fixture_path

    trace = fixture_path("traces",
                           "HolisticTraceAnalysis__ns_resolution_rank0of1.pt.trace.json.gz")
    line = usage_error_in_process(capsys, ["trace", str(trace), "--json", "/nonexistent-dir/x"])
    assert line.startswith("collscope trace: --json: cannot write"), line
