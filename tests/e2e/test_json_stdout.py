"""`--json -` puts only JSON on stdout for bench, overlap and train (the table is not printed),
and `doctor --json` its one document, even where a library in every rank writes to file
descriptor 1 (the planted stdout@R does, as torch 2.9's gloo does when its group connects):
that line reaches stderr. Ranks forked (bench, train) and exec'd (overlap) alike. A results
file that fails while bench measures ends the run with one line and exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import cli_env, read_records, run_cli

CASES = {
    "bench": ["bench", "-b", "64K", "-e", "128K", "-n", "2", "-w", "1", "--per-rank",
              "--nccl-json", "{tmp}/nj.json"],
    "overlap": ["overlap", "--iters", "2", "--warmup", "0", "--matmul-dim", "64", "-b", "64K"],
    "train": ["train", "--steps", "3", "--warmup", "2", "--seq-len", "16", "--batch-size", "1",
              "--hidden", "64", "--layers", "1", "--heads", "2"],
}


PRINTING_RANKS = "stdout@0,stdout@1"
PLANTED = "a library's line on file descriptor 1"


@pytest.mark.parametrize("command", CASES)
def test_json_to_stdout_carries_nothing_else(command, tmp_path: Path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in CASES[command]]
    env = cli_env(COLLSCOPE_FAULT_INJECT=PRINTING_RANKS,
                  COLLSCOPE_SPAWN="exec" if command == "overlap" else "")
    proc = run_cli(*argv, "--nproc", "2", "--json", "-", timeout=150, env=env)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]   # every line is JSON
    assert records[0]["kind"] == "run" and len(records) >= 2
    assert proc.stderr.count(PLANTED) == 2                              # both ranks' lines
    if command == "bench":                 # the note on the file written goes to stderr
        assert f"# Wrote JSON output to {tmp_path}/nj.json" in proc.stderr
    if command == "train":
        assert "75% CI (order statistics; 3 steps are too few for 95%)" in records[0]["timing"]


def test_doctor_json_carries_nothing_else_while_its_self_test_ranks_print():
    proc = run_cli("doctor", "--json", timeout=120,
                   env=cli_env(COLLSCOPE_FAULT_INJECT=PRINTING_RANKS))
    assert proc.returncode in (0, 1), proc.stderr                       # 1: a warning here
    report = json.loads(proc.stdout)
    (selftest,) = [f for f in report["findings"] if f["id"] == "selftest.allreduce"]
    assert selftest["level"] == "ok"                 # the gloo ranks ran, and printed:
    assert proc.stderr.count(PLANTED) == 2


def test_a_results_file_that_fills_up_while_measuring_is_said_once_with_exit_1(tmp_path):
    out, csv = tmp_path / "b.jsonl", tmp_path / "b.csv"
    proc = run_cli("bench", "-b", "1K", "-e", "4K", "-n", "2", "-w", "1", "--nproc", "2",
                   "--json", str(out), "--csv", str(csv), timeout=120,
                   env=cli_env(COLLSCOPE_FAULT_INJECT="disk-full@0:2"))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        f"collscope bench: --json: writing '{out}' failed after 2 record(s), which it holds: "
        "No space left on device",
        f"collscope bench: --csv: writing '{csv}' failed after 2 record(s), which it holds: "
        "No space left on device"]
    assert [r["kind"] for r in read_records(out)] == ["run", "result"]
    assert len(csv.read_text().splitlines()) == 3                      # header + 2 rows
    rows = [line for line in proc.stdout.splitlines() if line.startswith(" ")]
    assert [int(r.split()[0]) for r in rows] == [1024, 2048, 4096]     # every size measured
