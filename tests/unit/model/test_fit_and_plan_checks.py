"""What `collscope model fit` and `plan` check in their inputs: bandwidth left unidentified
(a sweep whose times fall with size), malformed input lines said on stderr, conflicting plan /
fit flags refused, a train record of another dtype noted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collscope.cli import main
from collscope.model.fit import Sample, fit_group
from tests.conftest import fixture_path
from tests.helpers import usage_error_in_process
from tests.unit.report.samples import train_records

SIZES = [65536 << k for k in range(6)]                       # 64 KiB .. 2 MiB
FALLING = [2127.0, 1900.0, 1700.0, 1500.0, 1300.0, 1126.0]   # us: times FALL as size grows


def _sweep(path: Path, times: list[float], extra_lines: str = "") -> Path:
    """A 1 node x 2 ranks all_reduce sweep, both placements, as bench's JSON Lines."""
    lines = [{"kind": "run", "command": "bench", "backend": "gloo", "world_size": 2,
              "nodes": 1, "ranks_per_node": 2}]
    for size, time_us in zip(SIZES, times):
        for in_place, factor in ((True, 1.01), (False, 1.0)):
            lines.append({"kind": "result", "collective": "all_reduce", "size_bytes": size,
                          "count": size // 4, "dtype": "float", "op": "sum", "root": -1,
                          "in_place": in_place, "world_size": 2, "iters": 20,
                          "time_us": time_us * factor, "algbw_gbs": 1.0, "busbw_gbs": 1.0,
                          "wrong": 0})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + extra_lines)
    return path


@pytest.mark.parametrize(("times", "why"), [
    (FALLING, "time does not grow with size (slope of log time against log size -0.183"),
    ([100.0, 101.0, 99.0, 100.5, 99.5, 100.0], "time does not grow with size"),
])
def test_a_sweep_whose_time_does_not_grow_leaves_b_unidentified(times: list[float],
                                                                 why: str) -> None:
    samples = [Sample(s, t, f"row {i}") for i, (s, t) in enumerate(zip(SIZES, times))]
    fit = fit_group(samples, "all_reduce", 2)
    assert fit.busbw_gbs is None and not fit.identified
    assert fit.busbw_unidentified.startswith(why)
    assert fit.size_trend_p is not None and fit.size_trend_p >= 0.01


def test_two_sizes_measured_twice_identify_b_by_the_slope_test() -> None:
    # Four rows of two sizes, time doubling: no rank test of 4 rows could say so at 0.01.
    samples = [Sample(s, t) for s, t in ((8 << 30, 24050.0), (8 << 30, 24006.0),
                                        (16 << 30, 46170.0), (16 << 30, 46070.0))]
    fit = fit_group(samples, "all_reduce", 128)
    assert fit.identified and fit.busbw_gbs is not None and fit.size_trend_p < 1e-4


def test_fit_says_unidentified_and_predict_refuses(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    records = _sweep(tmp_path / "b1.jsonl", FALLING)
    model = tmp_path / "mb.json"
    assert main(["model", "fit", str(records), "-o", str(model)]) == 0
    captured = capsys.readouterr()
    row = next(line for line in captured.out.splitlines() if "all_reduce 1x2" in line)
    assert "unidentified" in row and "e+11" not in row
    assert "B of all_reduce 1x2 unidentified: time does not grow with size" in captured.out
    assert "B unidentified" in captured.err
    (group,) = json.loads(model.read_text())["groups"]
    assert group["busbw_gbs"] is None
    assert group["busbw_unidentified"].startswith("time does not grow with size")
    line = usage_error_in_process(capsys, [
        "model", "predict", str(model), "--collective", "all_reduce", "--nodes", "1",
        "--ranks-per-node", "2", "-b", "64M", "-e", "64M"])
    assert "B of all_reduce 1x2 is unidentified: time does not grow with size" in line
    line = usage_error_in_process(capsys, [
        "model", "predict", str(model), "--collective", "all_reduce", "--nodes", "1",
        "--ranks-per-node", "2", "--algo", "ring"])
    assert "--algo ring" in line and "unidentified" in line
    assert main(["model", "fit", str(records), "-o", "-"]) == 0    # --json / stdout: null
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["busbw_gbs"] is None


def test_fit_says_each_malformed_line_on_stderr(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    growing = [10.0 + s / 1e3 for s in SIZES]
    garbage = _sweep(tmp_path / "garb.jsonl", growing, "garbage line\n[1, 2]\n")
    assert main(["model", "fit", str(garbage), "-o", str(tmp_path / "m.json")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "collscope model: garb.jsonl: line 14: not JSON (Expecting value); skipped" in err
    assert "collscope model: garb.jsonl: line 15: not a JSON object; skipped" in err


@pytest.fixture
def h100_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "h100.json"
    log = fixture_path("nccl-tests-logs", "h100_2node_default_nccl_issue309.txt")
    assert main(["model", "fit", str(log), "-o", str(out)]) == 0
    capsys.readouterr()
    return out


def test_conflicting_plan_and_fit_flags_exit_2_with_one_line(
        h100_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = ["model", "plan", str(h100_model), "--nodes", "2", "--ranks-per-node", "8"]
    h100_4node = str(fixture_path("nccl-tests-logs", "h100_4node_default_nccl_issue309.txt"))
    h100_2node = str(fixture_path("nccl-tests-logs", "h100_2node_default_nccl_issue309.txt"))
    cases = [
        ([*plan, "--preset", "tiny", "--params", "5"], "--preset/--params: give one, not both"),
        ([*plan, "--preset", "tiny", "--parallel", "fsdp", "--comm-hook", "bf16"],
         "--comm-hook bf16: DDP communication hooks do not apply to --parallel fsdp"),
        ([*plan, "--preset", "tiny", "--parallel", "fsdp", "--bucket-cap-mb", "5"],
         "--bucket-cap-mb 5: DDP's bucket cap does not apply to --parallel fsdp"),
        (["model", "fit", h100_4node, h100_2node, "-o", str(tmp_path / "m.json"),
          "--holdout-nodes", "7"],
         "--holdout-nodes: no 7-node data in the inputs (node counts present: 2, 4)"),
    ]
    for argv, needle in cases:
        line = usage_error_in_process(capsys, argv)
        assert needle in line, (argv, line)
    assert not (tmp_path / "m.json").exists()


def test_a_train_record_of_another_dtype_gets_a_note(
        h100_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train = tmp_path / "trains.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in (
        {"kind": "run", "command": "train", "nodes": 1, "ranks_per_node": 2},
        {**train_records()[0], "label": "25MB none", "step_time_ms_nosync": 40.0,
         "overlap_fraction": 0.2, "is_ddp_default": True,
         "config": {"preset": "tiny", "dtype": "float32"}})))
    argv = ["model", "plan", str(h100_model), "--preset", "tiny", "--nodes", "2",
            "--ranks-per-node", "8", "--train", str(train)]
    assert main([*argv, "--json", "-"]) == 0
    captured = capsys.readouterr()
    (note,) = json.loads(captured.out.splitlines()[0])["notes"]
    assert "measured in float32, the plan sizes messages in --dtype bfloat16" in note
    assert f"collscope model: note: {note}" in captured.err.splitlines()
    assert main([*argv, "--dtype", "float32", "--json", "-"]) == 0    # matching: no note
    assert json.loads(capsys.readouterr().out.splitlines()[0])["notes"] == []
