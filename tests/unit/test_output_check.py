"""Where output paths are checked (collscope.runtime.entry): the pure agreement of the writers'
outcomes, and the check in the parent before local ranks are spawned."""

from __future__ import annotations

import pytest

from collscope.errors import UsageError
from collscope.runtime.entry import Job, agreed_problem, launch_or_spawn

NO_DIR = "--json: cannot write '/x/o.jsonl': folder /x does not exist or is not writable"


@pytest.mark.parametrize(("problems", "named_hosts", "line"), [
    ([("a", None), ("a", None)], False, None),
    ([("a", NO_DIR), ("a", None)], False, NO_DIR),
    # one shared file system: every node's writer says the same, printed once
    ([("a", NO_DIR), ("b", NO_DIR), ("b", None)], True, f"{NO_DIR} (on a, b)"),
    ([("a", None), ("b", "--collect: directory '/d' does not exist")], True,
     "--collect: directory '/d' does not exist (on b)"),
    ([("a", "x"), ("b", "y")], False, "x; y"),
])
def test_agreed_problem(problems, named_hosts, line):
    assert agreed_problem(problems, named_hosts) == line


def test_rank_0_checks_its_files_and_each_nodes_local_rank_0_the_nodes_files():
    def mine() -> None: ...

    def nodes() -> None: ...

    job = Job("train", "gloo", 10, 2, lambda *_: None, lambda *_: 0, output_check=mine,
              node_output_check=nodes)
    assert job.output_checks(rank=0, local_rank=0) == [mine, nodes]
    assert job.output_checks(rank=8, local_rank=0) == [nodes]    # node 1's first rank
    assert job.output_checks(rank=1, local_rank=1) == []
    only_rank0 = Job("bench", "gloo", 10, 2, lambda *_: None, lambda *_: 0, output_check=mine)
    assert only_rank0.output_checks(rank=8, local_rank=0) == []


def test_started_by_hand_the_parent_checks_before_any_rank_starts(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
                 "PMI_RANK"):
        monkeypatch.delenv(name, raising=False)       # no launcher: collscope spawns

    def no_spawn(*_args: object) -> int:
        raise AssertionError("ranks were spawned although the output check failed")

    monkeypatch.setattr("collscope.runtime.spawn.spawn_local", no_spawn)

    def check() -> None:
        raise UsageError(NO_DIR)

    job = Job("bench", "gloo", 10, 2, lambda *_: None, lambda *_: 0, output_check=check)
    with pytest.raises(UsageError, match="--json: cannot write"):
        launch_or_spawn(job, ["bench"])
