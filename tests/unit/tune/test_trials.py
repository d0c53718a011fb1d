"""Trial commands, launch modes, outcome classification and the merge of hand-run trials."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from collscope.errors import UsageError
from collscope.tune.analysis import Trial
from collscope.tune.space import Config, Library, build_space
from collscope.tune.trials import (
    BenchArgs,
    Launcher,
    choose_launcher,
    classify,
    merge_trials,
    parse_template,
    printed_command,
)

BENCH = BenchArgs(("all_reduce",), 1024, 1 << 20, 4, 20, 5, "float", "auto", 150.0)
RESULT = {"kind": "result", "collective": "all_reduce", "size_bytes": 1024, "time_us": 10.0,
          "world_size": 2, "wrong": 0, "dtype": "float"}


def test_bench_command_is_an_in_place_json_run_with_half_the_timeout():
    argv = BENCH.argv("t.jsonl")
    assert argv[:4] == [sys.executable, "-m", "collscope", "bench"]
    assert " ".join(argv[4:]) == (
        "all_reduce --min-bytes 1024 --max-bytes 1048576 --step-factor 4 --iters 20 "
        "--warmup-iters 5 --dtype float --in-place --backend auto --timeout 150 --json t.jsonl")
    # Written by bench's own config, so bench's own parser reads back what the trial meant.
    from collscope.cli import build_parser
    from collscope.cli.bench import config_from_args

    config = config_from_args(build_parser().parse_args(argv[3:]))
    assert (config.min_bytes, config.max_bytes, config.step_factor, config.iters,
            config.warmup_iters, config.dtypes, config.in_place, config.out_of_place,
            config.timeout_s) == (1024, 1 << 20, 4, 20, 5, ["float"], True, False, 150.0)


@pytest.mark.parametrize("launcher, expected", [
    (Launcher("standalone", nproc=4), ["BENCH", "--nproc", "4"]),
    (Launcher("standalone"), ["BENCH"]),
    (Launcher("slurm"), ["srun", "--export=ALL", "--kill-on-bad-exit=1", "BENCH"]),
    (Launcher("template", ("mpirun", "-np", "16", "{cmd}", "--tail")),
     ["mpirun", "-np", "16", "BENCH", "--tail"]),
])
def test_launch_modes_place_the_command_as_separate_words(launcher, expected):
    assert launcher.argv(["BENCH"]) == expected


@pytest.mark.parametrize("template, problem", [
    ("mpirun -np 4", "must hold {cmd} exactly once"),
    ("wrap {cmd} {cmd}", "must hold {cmd} exactly once"),
    ("sh -c 'run {cmd}'", "must hold {cmd} exactly once"),
    ("wrap 'unclosed {cmd}", "cannot split"),
])
def test_bad_templates_are_refused(template, problem):
    with pytest.raises(UsageError, match=problem):
        parse_template(template)


def test_choose_launcher():
    assert choose_launcher(None, 2, {}) == Launcher("standalone", nproc=2)
    assert choose_launcher(None, None, {"SLURM_JOB_ID": "7"}).mode == "slurm"
    assert choose_launcher("srun -n 4 {cmd}", None, {"SLURM_JOB_ID": "7"}).mode == "template"
    with pytest.raises(UsageError, match="--nproc: inside a Slurm allocation"):
        choose_launcher(None, 4, {"SLURM_JOB_ID": "7"})
    with pytest.raises(UsageError, match="--nproc: the --launch template decides"):
        choose_launcher("w {cmd}", 4, {})
    torchrun = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "h"}
    with pytest.raises(UsageError, match="rank 1 of a 2-rank torchrun job"):
        choose_launcher(None, None, torchrun)


@pytest.mark.parametrize("timed_out, code, records, tail, expected", [
    (False, 0, [RESULT], "", ("ok", "")),
    (True, None, [RESULT], "# table\ncollscope bench: rank 1 timed out\n#\n",
     ("failed", "hung: no exit within --timeout 60 s, killed (collscope bench: rank 1 timed "
                "out)")),
    (False, 3, [{**RESULT, "wrong": 2}, {**RESULT, "wrong": 1}], "",
     ("failed", "#wrong 3 > 0: results failed verification")),
    (False, 1, [RESULT], "Traceback...\nRuntimeError: boom\n",
     ("failed", "exit code 1 (RuntimeError: boom)")),
    (False, 0, [], "", ("failed", "no results written")),
    (False, 0, [{**RESULT, "wrong": None}], "", ("ok", "")),     # unverifiable (alltoall)
])
def test_classify(timed_out, code, records, tail, expected):
    assert classify(timed_out, code, records, tail, 60.0) == expected


def test_printed_command_sets_and_unsets_the_configuration():
    config = Config((("NCCL_ALGO", "Tree"), ("NCCL_PROTO", None)))
    line = printed_command(Launcher("standalone"), BENCH, Trial(0, 0, 0, 0, config), "r1.jsonl")
    words = shlex.split(line)
    assert words[:4] == ["env", "NCCL_ALGO=Tree", "-u", "NCCL_PROTO"]
    assert words[4:8] == [sys.executable, "-m", "collscope", "bench"]


def bench_file(path, env, started, times, wrong=0):
    records = [{"kind": "run", "command": "bench", "env": env, "started_at": started,
                "world_size": 2, "nodes": 1}]
    records += [{**RESULT, "size_bytes": size, "time_us": t, "wrong": wrong}
                for size, t in times.items()]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return str(path)


def test_merge_reads_configurations_from_run_records_and_rounds_from_start_times(tmp_path):
    space = build_space([("NCCL_ALGO", ["Ring", "Tree"])], {}, Library())
    files = [
        bench_file(tmp_path / "a.jsonl", {}, 10.0, {1024: 10.0}),
        bench_file(tmp_path / "b.jsonl", {"NCCL_ALGO": "Ring"}, 11.0, {1024: 5.0}),
        bench_file(tmp_path / "c.jsonl", {"NCCL_ALGO": "Tree"}, 12.0, {1024: 5.0}, wrong=4),
        bench_file(tmp_path / "d.jsonl", {"NCCL_ALGO": "Ring"}, 13.0, {1024: 5.5}),
        bench_file(tmp_path / "e.jsonl", {}, 14.0, {1024: 11.0}),
    ]
    trials = merge_trials(list(reversed(files)), space.grid())
    assert [(t.config.as_dict()["NCCL_ALGO"], t.round, t.status) for t in trials] == [
        (None, 0, "ok"), ("Ring", 0, "ok"), ("Tree", 0, "failed"), ("Ring", 1, "ok"),
        (None, 1, "ok")]
    assert trials[2].reason == "#wrong 4 > 0: results failed verification"
    assert trials[1].measurements[0].time_us == 5.0


def test_merge_refuses_files_it_cannot_place(tmp_path):
    space = build_space([("NCCL_ALGO", ["Ring"])], {}, Library())
    other = bench_file(tmp_path / "x.jsonl", {"NCCL_ALGO": "Tree"}, 1.0, {1024: 1.0})
    with pytest.raises(UsageError, match="no configuration of this --space"):
        merge_trials([other], space.grid())
    log = tmp_path / "y.jsonl"
    log.write_text('{"kind": "result"}\n')
    with pytest.raises(UsageError, match="not a collscope bench JSON Lines file"):
        merge_trials([str(log)], space.grid())


@pytest.mark.parametrize("field, value, problem", [
    ("size_bytes", "x", "size_bytes 'x' is not a whole number of bytes"),
    ("wrong", "N/A", "wrong 'N/A' is not a count"),
    ("time_us", "fast", "time_us 'fast' is not a number"),
    ("world_size", 2.5, "world_size 2.5 is not a count"),
    ("collective", None, "collective None is not a collective name"),
])
def test_merge_refuses_malformed_result_records_naming_file_and_line(tmp_path, field, value,
                                                                     problem):
    space = build_space([("NCCL_ALGO", ["Ring"])], {}, Library())
    path = tmp_path / "bad.jsonl"
    bench_file(path, {}, 1.0, {1024: 10.0, 4096: 12.0})
    lines = path.read_text().splitlines()
    lines[2] = json.dumps({**json.loads(lines[2]), field: value})     # the 4 KiB result
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UsageError) as refused:
        merge_trials([str(path)], space.grid())
    message = str(refused.value)
    assert message.startswith(f"--merge: {path}: line 3: {problem}") and "\n" not in message


def test_a_trial_with_a_malformed_result_fails_instead_of_crashing():
    status, reason = classify(False, 0, [{**RESULT, "wrong": "N/A"}], "", 60.0)
    assert (status, reason) == ("failed", "malformed result record: wrong 'N/A' is not a count "
                                          "(a whole number, or null)")
