"""`collscope hang` on the real dumps and ncclras outputs of tests/fixtures: each gives its
ground truth (SOURCES.md) in hang_verdict, with the exit code, in under 2 s."""

from __future__ import annotations

import time

import pytest

from collscope.hang import Cause, analyse_paths, render_text
from tests.conftest import fixture_path
from tests.helpers import read_records, run_cli

FOLDERS = [
    ("gloo_skip_4ranks", [2], Cause.NOT_ENTERED, 9, "all_reduce"),
    ("gloo_mismatch_4ranks_json", [3], Cause.OP_MISMATCH, 9, "all_reduce"),
    ("gloo_dead_4ranks", [1], Cause.DEAD, 9, "all_reduce"),
    ("gloo_p2p_4ranks", [1, 2], Cause.NOT_ENTERED, 5, "all_reduce"),
    ("nvrx_gpu_error_2nd", [9, 14], Cause.NOT_COMPLETED, 87749, "_all_gather_base"),
]

RAS = [
    ("readme-example_ras_block00.txt", [], Cause.NONE),
    ("readme-example_ras_block01.txt", [], Cause.NONE),
    ("readme-example_ras_block02.txt", [], Cause.NOT_ENTERED),
    ("readme-example_ras_block03.txt", [0, 2, 3, 4, 5, 7], Cause.NOT_ENTERED),
    ("readme-example_ras_block04.txt", [0, 8, 16, 24], Cause.NOT_ENTERED),
    ("readme-example_ras_block05.txt", [21], Cause.DEAD),
    ("readme-example_ras_block06.txt", [21], Cause.DEAD),
    ("readme-example_ras_block07.json", [1], Cause.DEAD),
    ("readme-example_ras_block08.txt", [], Cause.NONE),
    ("readme-example_ras_block09.txt", [], Cause.DEAD),
    ("readme-example_ras_block10.json", [], Cause.DEAD),
    ("ray_healthy_4rank.json", [], Cause.NONE),
    ("ray_multi_comm.json", [1], Cause.NOT_ENTERED),
    ("ray_dead_rank_missing_comma.json", [1], Cause.DEAD),
]


@pytest.mark.serial   # bounds a wall time
@pytest.mark.parametrize("folder,culprits,cause,seq,op", FOLDERS)
def test_fixture_folder_names_its_ground_truth(folder, culprits, cause, seq, op):
    started = time.perf_counter()
    analysis = analyse_paths([fixture_path("flight-recorder", folder)])
    elapsed = time.perf_counter() - started
    verdict = analysis.verdict
    assert verdict.culprit_ranks == culprits
    assert verdict.cause == cause
    assert verdict.seq == seq and verdict.collective == op
    assert verdict.headline.startswith("HANG: ")
    assert not set(verdict.waiting_ranks) & set(culprits)
    assert elapsed < 2.0, f"{folder}: {elapsed:.2f} s"
    text = render_text(analysis)
    assert text.splitlines()[0] == verdict.headline


def test_nccl_job_names_both_gpu_error_ranks_and_every_other_rank_waits():
    verdict = analyse_paths([fixture_path("flight-recorder", "nvrx_gpu_error_2nd")]).verdict
    assert verdict.culprit_ranks == [9, 14]
    # The 14 other ranks wait on them through TP, EP, DP and pipeline groups (the cascade).
    assert verdict.waiting_ranks == [r for r in range(16) if r not in (9, 14)]
    assert {o.group for o in verdict.origins} == {'"37" (TENSOR_MODEL_PARALLEL_GROUP)',
                                                  '"38" (TENSOR_MODEL_PARALLEL_GROUP)'}
    assert "which ranks 8, 10, 11 completed" in verdict.headline


def test_skip_names_the_culprits_last_call_and_the_stacks():
    analysis = analyse_paths([fixture_path("flight-recorder", "gloo_skip_4ranks")])
    assert "Rank 2's last call there: broadcast #8 at train.py:88 in steps" in \
        analysis.verdict.headline
    text = render_text(analysis)
    assert "stack of rank 2's last call (broadcast):" in text
    assert "stack of waiting rank 0's pending all_reduce:" in text


def test_dead_rank_is_listed_without_a_dump_and_rank_3_waits():
    analysis = analyse_paths([fixture_path("flight-recorder", "gloo_dead_4ranks")])
    assert analysis.missing == {1: "no dump"}
    assert analysis.verdict.waiting_ranks == [3]


@pytest.mark.parametrize("name,culprits,cause", RAS)
def test_ras_file_names_its_ground_truth(name, culprits, cause):
    verdict = analyse_paths([fixture_path("nccl-ras", name)]).verdict
    assert verdict.culprit_ranks == culprits
    assert verdict.cause == cause


def test_ras_missing_comma_is_repaired_and_said():
    analysis = analyse_paths([fixture_path("nccl-ras", "ray_dead_rank_missing_comma.json")])
    assert any("repaired 1 missing comma" in note for note in analysis.notes)
    assert analysis.verdict.hosts == {0: "10.0.77.184", 1: "10.0.77.184"}


def test_ras_lists_the_ranks_ahead_and_the_laggards_are_the_others(tmp_path):
    # nccl#1911's output: the two listed ranks launched MORE operations than the 30 others.
    text = fixture_path("nccl-ras", "readme-example_ras_block02.txt").read_text().replace(
        "32        32   RUNNING  MISMATCH", "32        32   RUNNING  MISMATCH") + (
        "\nWarnings\n========\n\n#0-0 (fa93daea854b060b) MISMATCH\n"
        "  Communicator ranks have different AllGather operation counts\n"
        "  30 ranks have launched up to operation 640\n"
        "  2 ranks have launched up to operation 641\n"
        "  Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124\n"
        "  Rank 13 -- GPU 5 managed by process 323033 on node 10.137.190.124\n")
    path = tmp_path / "ras.txt"
    path.write_text(text)
    verdict = analyse_paths([path]).verdict
    assert verdict.culprit_ranks == [r for r in range(32) if r not in (12, 13)]
    assert verdict.waiting_ranks == [12, 13]


@pytest.mark.parametrize("folder,culprits", [(f[0], f[1]) for f in FOLDERS[:1] + FOLDERS[-1:]])
def test_cli_exit_code_and_json_records(tmp_path, folder, culprits):
    out = tmp_path / "hang.jsonl"
    proc = run_cli("hang", str(fixture_path("flight-recorder", folder)), "--json", str(out),
                   timeout=60)
    assert proc.returncode == 1, proc.stderr
    records = read_records(out)
    assert records[0]["kind"] == "run" and records[0]["command"] == "hang"
    assert {r["kind"] for r in records[1:-1]} == {"hang_group"}
    verdict = records[-1]
    assert verdict["kind"] == "hang_verdict" and verdict["culprit_ranks"] == culprits
    assert proc.stdout.splitlines()[0] == verdict["headline"]


def test_cli_healthy_ras_exits_0_and_json_to_stdout_carries_nothing_else():
    proc = run_cli("hang", str(fixture_path("nccl-ras", "ray_healthy_4rank.json")), "--json",
                   "-", timeout=60)
    assert proc.returncode == 0, proc.stderr
    import json

    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["kind"] for r in records] == ["run", "hang_group", "hang_verdict"]
    assert records[-1]["culprit_ranks"] == [] and records[-1]["cause"] == "none"
