"""`collscope overlap` on real gloo ranks: the three times, a sane efficiency, bad input."""

from __future__ import annotations

import pytest

from tests.helpers import read_records, run_cli, usage_error_in_process

pytestmark = pytest.mark.dist


@pytest.mark.serial   # judges overlap
def test_overlap_reports_three_times_and_a_sane_efficiency(tmp_path):
    out = tmp_path / "overlap.jsonl"
    # A matmul and a message of a few milliseconds each on this kind of machine: comparable,
    # so the efficiency (divided by the shorter) is not noise over a tiny denominator.
    proc = run_cli("overlap", "--nproc", "2", "--matmul-dim", "640", "-b", "4M", "--iters",
                   "20", "--warmup", "3", "--json", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for text in ("t_compute", "t_comm", "t_both", "overlap efficiency", "# Timing:"):
        assert text in proc.stdout
    run, result = read_records(out)
    assert run["command"] == "overlap" and result["kind"] == "overlap"
    assert result["matmul_dim"] == 640 and result["size_bytes"] == 4 * 1024**2
    compute, comm, both = result["t_compute_ms"], result["t_comm_ms"], result["t_both_ms"]
    assert min(compute, comm, both) > 0
    # Together takes at least about the longer of the two alone ...
    assert both >= 0.5 * max(compute, comm)
    # ... so the efficiency is at most about 1; on two shared cores, where the matmul and
    # gloo's threads compete, together can be much slower than in sequence (below 0).
    assert -5.0 <= result["overlap_efficiency"] <= 1.5
    assert result["overlap_efficiency"] == pytest.approx((compute + comm - both)
                                                          / min(compute, comm))


def test_flops_sizes_the_matmul(tmp_path):
    out = tmp_path / "overlap.jsonl"
    proc = run_cli("overlap", "--nproc", "2", "--flops", "2M", "-b", "4K", "--iters", "3",
                   "--warmup", "1", "--json", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _run, result = read_records(out)
    assert result["matmul_dim"] == 100  # 2 x 100^3 = 2e6


@pytest.mark.parametrize("args, flag", [
    (["-b", "12Q"], "-b/--bytes"),
    (["--flops", "lots"], "--flops"),
    (["--matmul-dim", "0"], "--matmul-dim"),
    (["--matmul-dim", "8", "--flops", "1G"], "--flops"),
    (["--iters", "0"], "--iters"),
    (["--dtype", "int8"], "--dtype"),
])
def test_bad_input_exits_2_with_one_line(args, flag, capsys):
    assert flag in usage_error_in_process(capsys, ["overlap", *args])


def test_bad_input_from_the_real_command_line():
    proc = run_cli("overlap", "-b", "12Q", timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("collscope overlap: -b/--bytes: '12Q' is not a size")
