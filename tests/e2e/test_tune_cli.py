"""`collscope tune` from the command line: refusals, printed commands, and --merge hand-over."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from tests.helpers import DOCUMENTED, read_records, run_cli, usage_error_in_process

GLOO = ["--backend", "gloo"]


@pytest.mark.parametrize("argv, needles", [
    (["--space", "NCCL_PROTOO=LL"], ["--space: NCCL_PROTOO", "did you mean NCCL_PROTO?"]),
    (["--space", "NCCL_PROTO=LL129"], ["NCCL_PROTO=LL129", "accepted: ll, ll128, simple"]),
    (["--space", "NCCL_PROTO"], ["is not NAME=V1,V2"]),
    (["--preset", "fastest"], ["--preset: 'fastest'", "rccl-basic, nccl-basic"]),
    ([], ["nothing to tune"]),
    (["--space", "NCCL_ALGO=Ring", "--launch", "mpirun -np 2"], ["--launch", "{cmd}"]),
    (["--space", "NCCL_ALGO=Ring", "--rounds", "0"], ["--rounds: 0"]),
    (["--space", "NCCL_ALGO=Ring", "--min-gain", "150"], ["--min-gain: 150%"]),
    (["--space", "NCCL_ALGO=Ring", "-b", "12Q"], ["-b/--min-bytes: '12Q'"]),
    (["--space", "NCCL_ALGO=Ring", "--print-commands", "--merge", "x"], ["use one"]),
    # written after the sweep: refused before it
    (["--space", "NCCL_ALGO=Ring", "--env-out", "/nonexistent/b.env"],
     ["--env-out: cannot write '/nonexistent/b.env'"]),
    (["--space", "NCCL_ALGO=Ring", "--tuner-csv", "/nonexistent/t.csv"],
     ["--tuner-csv: cannot write '/nonexistent/t.csv'"]),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, needles):
    line = usage_error_in_process(capsys, ["tune", *GLOO, *argv])
    for needle in needles:
        assert needle in line


def test_print_commands_lists_the_grid_in_rotated_rounds(tmp_path):
    proc = run_cli("tune", *GLOO, "--space", "NCCL_ALGO=Ring,Tree", "--rounds", "2",
                   "--print-commands", "--trials-dir", str(tmp_path), "-b", "1K", "-e", "4K")
    assert proc.returncode == 0, proc.stderr
    commands = [shlex.split(line) for line in proc.stdout.splitlines()
                if not line.startswith("#")]
    assert len(commands) == 6                                    # 3 configurations x 2 rounds
    settings = [" ".join(words[1:words.index("-m") - 1]) for words in commands]
    assert settings == ["-u NCCL_ALGO", "NCCL_ALGO=Ring", "NCCL_ALGO=Tree",
                        "NCCL_ALGO=Ring", "NCCL_ALGO=Tree", "-u NCCL_ALGO"]
    for words in commands:
        bench = words[words.index("bench"):]
        assert bench[bench.index("--json") + 1].startswith(str(tmp_path))
        assert "--in-place" in bench
    assert "--merge" in proc.stdout and "NCCL_ALGO unset (the library's default)" in proc.stdout


def write_bench(path, env, started, times, nodes=2, world=16):
    records = [{"kind": "run", "command": "bench", "env": env, "started_at": started,
                "world_size": world, "nodes": nodes, "launcher": "torchrun", "backend": "nccl"}]
    for size, time_us in times.items():
        records.append({"kind": "result", "collective": "all_reduce", "size_bytes": size,
                        "count": size // 4, "dtype": "float", "op": "sum", "root": 0,
                        "in_place": True, "world_size": world, "iters": 20, "time_us": time_us,
                        "algbw_gbs": 0.0, "busbw_gbs": 0.0, "wrong": 0})
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")


def test_merge_judges_hand_run_trials_and_hands_the_winner_over(tmp_path):
    """Three rounds run by hand; Tree+LL is 2x faster at 64 KiB, equal at 16 MiB."""
    files = []
    jitter = (1.0, 1.04, 0.97)
    for round_, j in enumerate(jitter):
        for position, (env, small, large) in enumerate((
                ({}, 100.0, 5000.0),
                ({"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"}, 50.0, 5000.0 * (1 + 0.01 * round_)),
                ({"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"}, 130.0, 7000.0))):
            path = tmp_path / f"r{round_}-{position}.jsonl"
            write_bench(path, env, round_ * 10 + position, {65536: small * j, 16 << 20: large * j})
            files.append(str(path))
    env_out, csv_out, json_out = (tmp_path / "best.env", tmp_path / "tuner.conf",
                                  tmp_path / "tune.jsonl")
    proc = run_cli("tune", *GLOO, "--space", "NCCL_ALGO=Ring,Tree", "--space", "NCCL_PROTO=LL",
                   "--merge", *files, "--env-out", str(env_out), "--tuner-csv", str(csv_out),
                   "--json", str(json_out))
    assert proc.returncode == 0, proc.stderr
    assert "verdict: NCCL_ALGO=Tree NCCL_PROTO=LL wins at every size" in proc.stdout
    assert "t-interval on the mean log speed-up" in proc.stdout

    sourced = subprocess.run(["bash", "-c", 'set -eu; source "$1"; echo "$NCCL_ALGO $NCCL_PROTO"',
                              "bash", str(env_out)], capture_output=True, text=True, timeout=10)
    assert sourced.returncode == 0 and sourced.stdout == "Tree LL\n", sourced.stderr

    rows = [line.split(",") for line in csv_out.read_text().splitlines()
            if line and not line.startswith("#")]
    assert rows == [["allreduce", "65536", "65536", "tree", "ll", "-1", "2", "16", "-1", "-1"]]
    assert rows[0][0] in DOCUMENTED["collective_type"]

    records = read_records(json_out)
    assert records[0]["kind"] == "run" and records[0]["command"] == "tune"
    assert records[0]["world_size"] == 16 and records[0]["nodes"] == 2     # from the trials
    assert records[0]["extra"]["space"] == {"NCCL_ALGO": ["Ring", "Tree"], "NCCL_PROTO": ["LL"]}
    assert records[0]["extra"]["baseline"] == {"NCCL_ALGO": None, "NCCL_PROTO": None}
    assert len([r for r in records if r["kind"] == "tune_trial"]) == 9
    tree = [r for r in records if r["kind"] == "tune" and r["label"].startswith("NCCL_ALGO=Tree")]
    assert {r["size_bytes"]: r["verdict"] for r in tree} == {65536: "faster",
                                                             16 << 20: "within noise"}
    ring = [r for r in records if r["kind"] == "tune" and r["label"].startswith("NCCL_ALGO=Ring")]
    assert all(r["verdict"] == "slower" and r["ratio_ci_high"] < 1 for r in ring)


def test_tune_is_listed_in_help():
    proc = run_cli("--help")
    assert " tune " in proc.stdout
    proc = run_cli("tune", "--help")
    assert proc.returncode == 0 and "--tuner-csv" in proc.stdout and "{cmd}" in proc.stdout


def merged_sweep(tmp_path, slowdown=1.0):
    """tune --merge over a hand-made sweep; its --json file. ``slowdown`` scales every time."""
    files = []
    for round_, j in enumerate((1.0, 1.04, 0.97)):
        for position, (env, small) in enumerate((({}, 100.0), ({"NCCL_ALGO": "Tree"}, 50.0))):
            path = tmp_path / f"s{slowdown}-r{round_}-{position}.jsonl"
            write_bench(path, env, round_ * 10 + position,
                        {65536: small * j * slowdown, 1 << 20: 800.0 * j * slowdown})
            files.append(str(path))
    out = tmp_path / f"tune-{slowdown}.jsonl"
    proc = run_cli("tune", *GLOO, "--space", "NCCL_ALGO=Tree", "--merge", *files,
                   "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_report_draws_busbw_per_configuration_of_a_tune_sweep(tmp_path):
    sweep = merged_sweep(tmp_path)
    html = tmp_path / "report.html"
    proc = run_cli("report", str(sweep), "-o", str(html))
    assert proc.returncode == 0, proc.stderr
    page = html.read_text()
    assert "Tuning sweeps" in page and "all_reduce busbw per configuration" in page
    assert "NCCL_ALGO=Tree" in page and "defaults" in page
    assert "x the defaults [" in page                      # hover text: ratio with its interval
    assert "record kind" not in proc.stderr               # tune_trial records are not warned on


def test_compare_gates_one_tune_sweep_against_another(tmp_path):
    base, same, slower = (merged_sweep(tmp_path), merged_sweep(tmp_path),
                          merged_sweep(tmp_path, slowdown=1.5))
    proc = run_cli("compare", str(base), str(same))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "matched 4 rows (collective x placement x size; 2 distinct sizes)" in proc.stdout
    proc = run_cli("compare", str(base), str(slower), "--json", "-")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()][1:]
    assert {row["algo"] for row in rows} == {"tune: defaults", "tune: NCCL_ALGO=Tree"}
    assert all(row["verdict"] == "regressed" for row in rows)


def _three_rounds_tree_twice_as_fast(tmp_path) -> list[str]:
    """Trial files of 3 rounds: defaults at 100 us, NCCL_ALGO=Tree at 50 us (65536 bytes)."""
    files = []
    for round_, j in enumerate((1.0, 1.04, 0.97)):
        for position, (env, time_us) in enumerate((({}, 100.0), ({"NCCL_ALGO": "Tree"}, 50.0))):
            path = tmp_path / f"r{round_}-{position}.jsonl"
            write_bench(path, env, round_ * 10 + position, {65536: time_us * j})
            files.append(str(path))
    return files


def test_json_to_stdout_carries_the_records_and_nothing_else(tmp_path):
    files = _three_rounds_tree_twice_as_fast(tmp_path)
    env_out = tmp_path / "best.env"
    proc = run_cli("tune", *GLOO, "--space", "NCCL_ALGO=Tree", "--merge", *files,
                   "--json", "-", "--env-out", str(env_out))
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]    # every line a record
    assert [r["kind"] for r in records] == ["run", *["tune_trial"] * 6, "tune", "tune"]
    tree = records[-1]
    assert tree["verdict"] == "faster" and tree["winner"]
    assert tree["comparisons"] == 1 and tree["family_confidence"] == 0.95
    assert tree["confidence"] == 0.95 and tree["correction"].startswith("Bonferroni")
    assert f"wrote {env_out}" in proc.stderr
    assert "m = 1" in env_out.read_text()


def test_merge_refuses_a_malformed_result_with_one_line(tmp_path):
    path = tmp_path / "r0.jsonl"
    write_bench(path, {}, 1.0, {65536: 100.0})
    path.write_text(path.read_text().replace('"size_bytes": 65536', '"size_bytes": "x"'))
    proc = run_cli("tune", *GLOO, "--space", "NCCL_ALGO=Tree", "--merge", str(path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == (f"collscope tune: --merge: {path}: line 2: size_bytes 'x' is "
                                   "not a whole number of bytes; give the files collscope bench "
                                   "--json wrote")
    assert "Traceback" not in proc.stderr


def test_merge_says_each_malformed_line_and_still_judges_the_rest(tmp_path):
    files = _three_rounds_tree_twice_as_fast(tmp_path)
    with open(files[0], "a") as garbled:
        garbled.write("garbage line\n")
    proc = run_cli("tune", *GLOO, "--space", "NCCL_ALGO=Tree", "--merge", *files, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "garbage" in line or "line 3" in line]
    assert said == [f"collscope tune: {files[0]}: line 3: not JSON (Expecting value); skipped"]
    assert json.loads(proc.stdout.splitlines()[-1])["verdict"] == "faster"
