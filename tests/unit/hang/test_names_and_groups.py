"""Rank and host from file names, the hosts file, and gloo's group facts (pure)."""

from __future__ import annotations

import gzip
import shutil

import pytest

from collscope.hang import analyse_paths
from collscope.hang.config import parse_hosts
from collscope.hang.names import hosts_from_names, rank_and_host
from tests.conftest import fixture_path


@pytest.mark.parametrize("name,rank", [
    ("nccl_trace_rank_5", 5), ("_dump_15", 15), ("fr-dump-5.json", 5), ("fr_rank3.json.gz", 3),
    ("job4711_node-02_5", 5), ("/shared/fr/trace_12.pkl.xz", 12)])
def test_rank_is_the_last_number_of_the_name(name, rank):
    assert rank_and_host(name) == (rank, None)
    assert rank_and_host(name, own_rank=7) == (7, None)


def test_a_name_without_a_number_is_refused():
    with pytest.raises(ValueError, match="cannot tell the rank"):
        rank_and_host("trace_dump.json")


def test_hosts_are_the_name_part_that_differs_between_files():
    names = ["job4711_node-01_0", "job4711_node-01_1", "job4711_node-02_2"]
    assert hosts_from_names(names) == {names[0]: "node-01", names[1]: "node-01",
                                       names[2]: "node-02"}
    assert hosts_from_names(["nccl_trace_rank_0", "nccl_trace_rank_1"]) == {}
    assert hosts_from_names(["run1_a_0", "run2_b_1"]) == {}     # two places differ: unknown


def test_hosts_file_reads_json_and_lines():
    assert parse_hosts('{"0": "node-01", "4": "node-02"}') == {0: "node-01", 4: "node-02"}
    assert parse_hosts("# rank host\n0 node-01\n4,node-02\n") == {0: "node-01", 4: "node-02"}


def test_host_named_and_compressed_copies_of_a_fixture_read_the_same(tmp_path):
    source = fixture_path("flight-recorder", "gloo_skip_4ranks")
    for rank in range(4):
        host = "node-01" if rank < 2 else "node-02"
        data = (source / f"nccl_trace_rank_{rank}").read_bytes()
        target = tmp_path / f"job4711_{host}_{rank}.gz"
        target.write_bytes(gzip.compress(data))
    verdict = analyse_paths([tmp_path]).verdict
    assert verdict.culprit_ranks == [2]
    assert verdict.hosts == {0: "node-01", 1: "node-01", 2: "node-02", 3: "node-02"}
    assert verdict.headline.startswith("HANG: rank 2 (node-02) never entered all_reduce #9")


def test_gloo_default_group_comes_from_the_empty_key_and_a_non_dump_in_a_folder_is_skipped(
        tmp_path):
    source = fixture_path("flight-recorder", "nvrx_gpu_error_2nd")
    shutil.copytree(source, tmp_path / "job")
    analysis = analyse_paths([tmp_path / "job"])
    assert any("fault_injection.log" in note for note in analysis.notes)
    skip = analyse_paths([fixture_path("flight-recorder", "gloo_skip_4ranks")])
    assert [g.key.ranks for g in skip.groups.values()] == [(0, 1, 2, 3)]
    assert not any(g.members_inferred for g in skip.groups.values())


def test_stack_files_and_no_answer_are_read_beside_the_dumps(tmp_path):
    import json

    source = fixture_path("flight-recorder", "gloo_skip_4ranks")
    for rank in (0, 1, 3):
        shutil.copy(source / f"nccl_trace_rank_{rank}", tmp_path / f"fr_trace_rank_{rank}")
    (tmp_path / "stack_rank_2.json").write_text(json.dumps({
        "kind": "main_thread_stack", "rank": 2, "host": "node-02", "pid": 1, "time": 0,
        "frames": [{"filename": "/opt/job/train.py", "line": 93, "name": "<module>"},
                   {"filename": "/opt/job/train.py", "line": 41, "name": "step"},
                   {"filename": "/usr/lib/python3.11/threading.py", "line": 320,
                    "name": "wait"}]}))
    (tmp_path / "no_answer.json").write_text(json.dumps(
        {"kind": "no_answer", "ranks": [2], "why": "no reply in 10 s"}))
    verdict = analyse_paths([tmp_path]).verdict
    assert verdict.culprit_ranks == [2]
    assert verdict.hosts[2] == "node-02"
    assert "did not answer the dump request: no reply in 10 s" in verdict.headline
    assert "rank 2's main thread is at train.py:41 in step (wait)" in verdict.headline
