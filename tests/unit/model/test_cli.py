"""`collscope model` end to end, in process: fit, predict, check, plan and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collscope.cli import main
from tests.conftest import fixture_path
from tests.helpers import usage_error_in_process
from tests.unit.report.samples import train_records


def _log(name: str) -> str:
    return str(fixture_path("nccl-tests-logs", name))


def _records(text: str) -> dict[str, list[dict[str, object]]]:
    """JSON Lines by kind; every line must be an object with a kind."""
    found: dict[str, list[dict[str, object]]] = {}
    for line in text.splitlines():
        record = json.loads(line)
        found.setdefault(record["kind"], []).append(record)
    return found


@pytest.fixture
def h100_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "h100.json"
    assert main(["model", "fit", _log("h100_2node_default_nccl_issue309.txt"),
                 _log("h100_4node_default_nccl_issue309.txt"), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "all_reduce 4x8" in captured.out and "outlier row" in captured.err
    return out


def test_predict_prints_nccl_tests_rows_and_json(h100_model: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "pred.jsonl"
    assert main(["model", "predict", str(h100_model), "--collective", "all_reduce", "--nodes",
                 "8,16", "--ranks-per-node", "8", "--sizes", "256M-1G",
                 "--json", str(records)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line and not line.startswith("#")]
    assert [r[0] for r in rows] == ["268435456", "536870912", "1073741824"] * 2
    assert rows[0][1:5] == ["67108864", "float", "sum", "-1"]
    predictions = [json.loads(line) for line in records.read_text().splitlines()]
    assert [p["nodes"] for p in predictions] == [8] * 3 + [16] * 3
    first = predictions[0]
    assert first["kind"] == "prediction" and first["world_size"] == 64
    assert first["time_us_low"] <= first["time_us"] <= first["time_us_high"]
    assert float(rows[0][5]) == pytest.approx(first["time_us"], abs=0.05)


def test_json_to_stdout_carries_nothing_else(h100_model: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "check", str(h100_model),
                 _log("h100_8node_default_nccl_issue309.txt"), "--json", "-"]) == 0
    records = _records(capsys.readouterr().out)
    band = next(b for b in records["check_band"] if b["band"] == ">= 256 MiB")
    assert band["nodes"] == 8 and band["median_error_pct"] < 15
    (summary,) = records["check"]
    assert summary["sizes"] == 14 and len(records["check_row"]) == 28

def test_plan_llama2_7b_prints_bytes_per_step(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "mi325x.json"
    assert main(["model", "fit", _log("mi325x_1to8node_allreduce_rccl_egrep_filtered.txt"),
                 "-o", str(model)]) == 0
    capsys.readouterr()
    assert main(["model", "plan", str(model), "--preset", "llama2-7b", "--nodes", "1,2,4",
                 "--ranks-per-node", "8", "--step-compute-ms", "1000", "--json", "-"]) == 0
    records = _records(capsys.readouterr().out)
    assert list(records) == ["plan", "plan_row"] and len(records["plan"]) == 1
    rows = records["plan_row"]
    assert [r["bytes_per_step"] for r in rows] == [6_738_415_616 * 2] * 3
    assert [r["nodes"] for r in rows] == [1, 2, 4]
    assert all(r["comm_ms"] > 0 and 0 < r["scaling_efficiency"] <= 1.1 for r in rows)
    assert main(["model", "plan", str(model), "--preset", "llama2-7b", "--nodes", "1,2,4",
                 "--ranks-per-node", "8"]) == 0
    out = capsys.readouterr().out
    assert "13,476,831,232 = 1 x 6,738,415,616 params x 2 bytes" in out


def test_bad_input_exits_2_with_one_line(h100_model: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**json.loads(h100_model.read_text()), "version": 0}))
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"kind": "run", "command": "bench", "nodes": 1}\n')
    predict = ["--nodes", "8", "--ranks-per-node", "8"]
    cases = [
        (["model", "predict", str(old), "--collective", "all_reduce", *predict], "version 0"),
        (["model", "predict", str(h100_model), "--collective", "all_gather", *predict],
         "all_gather is not in the model"),
        (["model", "predict", str(h100_model), "--collective", "all_reduce", "--nodes", "0",
          "--ranks-per-node", "8"], "--nodes: 0 must be >= 1"),
        (["model", "plan", str(h100_model), "--preset", "llama2-7b", "--nodes", "2,-1",
          "--ranks-per-node", "8"], "--nodes: -1 must be >= 1"),
        (["model", "fit", str(empty), "-o", str(tmp_path / "m.json")], "no result rows"),
        (["model", "fit", _log("h100_2node_16gpu_alltoall_sendrecv_nccl_network_error.txt"),
          "-o", str(tmp_path / "m.json")], "no result table"),
        (["model", "check", str(tmp_path / "missing.json"), str(empty)], "cannot read"),
        (["model", "plan", str(h100_model), "--preset", "gpt5", "--nodes", "2",
          "--ranks-per-node", "8"], "--preset: 'gpt5'"),
        (["model"], "give a subcommand"),
        (["model", "fit", _log("h100_4node_default_nccl_issue309.txt"), "-o",
          str(tmp_path / "m.json"), "--holdout-nodes", "4"], "holds out every group"),
        (["model", "fit", _log("h100_4node_default_nccl_issue309.txt"), "-o", "-", "--json",
          "-"], "taken by -o -"),
    ]
    for argv, needle in cases:
        line = usage_error_in_process(capsys, argv)
        assert needle in line, (argv, line)


def test_plan_takes_compute_and_overlap_from_a_train_record(
        h100_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in (
        {"kind": "run", "command": "train", "nodes": 1, "ranks_per_node": 2},
        {**train_records()[0], "label": "5MB none", "step_time_ms_nosync": 50.0,
         "overlap_fraction": 0.1, "is_ddp_default": False},
        {**train_records()[1], "label": "25MB none", "step_time_ms_nosync": 400.0,
         "overlap_fraction": 0.25, "is_ddp_default": True})))
    assert main(["model", "plan", str(h100_model), "--preset", "small", "--nodes", "2,4",
                 "--ranks-per-node", "8", "--train", str(train), "--json", "-"]) == 0
    records = _records(capsys.readouterr().out)
    (plan,) = records["plan"]
    assert plan["step_compute_ms"] == 400.0 and plan["overlap"] == 0.25
    assert "25MB none" in plan["overlap_source"]
    two = records["plan_row"][0]
    assert two["exposed_ms"] == pytest.approx(0.75 * two["comm_ms"])
    assert two["step_ms"] == pytest.approx(400.0 + two["exposed_ms"])


def test_help_has_examples() -> None:
    from tests.helpers import run_cli

    proc = run_cli("model", "--help", timeout=60)
    assert proc.returncode == 0 and "collscope model plan" in proc.stdout


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("busbw_gbs", -5.0, "group 2 of the model file: busbw_gbs -5.0 is not a finite number > 0"),
    ("busbw_gbs", "fast", "busbw_gbs 'fast' is not a finite number > 0"),
    ("nodes", "2", "nodes '2' is not an integer >= 1"),
    ("nodes", True, "nodes True is not an integer >= 1"),
    ("alpha_us", None, "alpha_us None is not a finite number >= 0"),
    ("collective", "all_shuffle", "collective 'all_shuffle' is unknown; known: all_reduce"),
    ("algo", "magic", "algo 'magic' is not one of flat, hierarchical"),
    ("max_bytes", 1, "min_bytes 2097152 exceeds max_bytes 1"),
])
def test_model_file_with_bad_values_exits_2_naming_the_file(
        h100_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        field: str, value: object, needle: str) -> None:
    data = json.loads(h100_model.read_text())
    data["groups"][1][field] = value             # the 4x8 group, the one predictions use
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    line = usage_error_in_process(capsys, [
        "model", "predict", str(bad), "--collective", "all_reduce", "--nodes", "8",
        "--ranks-per-node", "8"])
    assert line.startswith(f"collscope model: MODEL: {bad}: ")
    assert needle in line and "refit with `collscope model fit`" in line


def test_model_file_group_without_a_field_exits_2(
        h100_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(h100_model.read_text())
    del data["groups"][0]["busbw_gbs"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    line = usage_error_in_process(capsys, ["model", "check", str(bad), str(bad)])
    assert "group 1 of the model file has no field 'busbw_gbs'" in line


def test_predict_header_says_every_method_and_marks_extrapolated_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """auto picks tree at 1 KiB and hierarchical at 1 GiB; 1 KiB lies outside the fitted
    sizes, and both rows outside the fitted node counts (1 and 2: 8 is 4 times 2)."""
    from collscope.model.costmodel import build
    from tests.helpers import model_groups

    model = tmp_path / "m.json"
    model.write_text(json.dumps(build(model_groups((1, 8, 14.0, 1000.0), (2, 8, 300.0, 50.0)))
                                .to_dict()))
    assert main(["model", "predict", str(model), "--collective", "all_reduce", "--nodes", "8",
                 "--ranks-per-node", "8", "-b", "1K", "-e", "1G", "-f", str(1 << 20)]) == 0
    out = capsys.readouterr().out
    methods = [line for line in out.splitlines() if line.startswith("# time: ")]
    assert len(methods) == 2
    assert "tree formula" in methods[0] and "hierarchical formula" in methods[1]
    assert all("extrapolated" not in line for line in methods)
    assert "# fit: size xF = the size lies F times outside the sizes fitted for all_reduce " \
        "1x8, all_reduce 2x8" in out
    assert "# fit: nodes x4.0 = 8 node(s) lies 4.0 times outside the node counts fitted (1, 2)" \
        in out
    rows = [line.split(None, 11) for line in out.splitlines()
            if line and not line.startswith("#")]
    assert [(r[0], r[10], r[11]) for r in rows] == [
        ("1024", "tree", "nodes x4.0 size x64"), ("1073741824", "hierarchical", "nodes x4.0")]


def test_fit_reads_the_same_log_given_twice_once(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # Review item 9: two copies of one log are not two runs; counting them made the spread
    # between the copies (0) the "run-to-run" spread and hid the outliers.
    log = _log("h100_4node_default_nccl_issue309.txt")
    once, twice = tmp_path / "once.json", tmp_path / "twice.json"
    assert main(["model", "fit", log, "-o", str(once)]) == 0
    capsys.readouterr()
    copy = tmp_path / "copy.txt"
    copy.write_bytes(Path(log).read_bytes())
    assert main(["model", "fit", log, log, str(copy), "-o", str(twice)]) == 0
    err = capsys.readouterr().err
    assert f"warning: INPUT: {log}: the same file as {log}; read once" in err
    assert f"{copy}: the same content as {log}" in err
    first, second = (json.loads(p.read_text()) for p in (once, twice))
    assert second["groups"] == first["groups"]
    assert "run-to-run" not in second["groups"][0]["spread_method"]


def test_fit_keeps_one_dtype_and_op_per_group(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    # Review item 19: `-d all -o all` logs hold every dtype x op of a collective in one run;
    # pooling int8 prod with float sum into one alpha/B fit mixes different curves.
    source = Path(_log("h100_4node_default_nccl_issue309.txt"))
    text = source.read_text()
    rows = [line for line in text.splitlines() if "     float     sum      -1 " in line]
    # Every row followed by itself as half max (as -d all -o all prints them; a copy of the
    # times, so that only the rule, not the numbers, makes the fits equal).
    mixed_text = "\n".join(line + ("\n" + line.replace("float     sum", " half     max")
                                   if line in rows else "") for line in text.splitlines())
    mixed = tmp_path / "mixed.txt"
    mixed.write_text(mixed_text)
    plain, out = tmp_path / "plain.json", tmp_path / "mixed.json"
    assert main(["model", "fit", str(source), "-o", str(plain)]) == 0
    capsys.readouterr()
    assert main(["model", "fit", str(mixed), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    ((group,), (alone,)) = (json.loads(p.read_text())["groups"] for p in (out, plain))
    assert group["rows"] == alone["rows"] <= 2 * len(rows)
    assert (group["alpha_us"], group["busbw_gbs"]) == (alone["alpha_us"], alone["busbw_gbs"])
    assert (f"all_reduce 4x8: fitted on float sum ({2 * len(rows)} rows); rows of other "
            f"dtypes/ops skipped, since one group is one dtype and op: half max "
            f"({2 * len(rows)})") in err
