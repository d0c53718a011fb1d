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


def test_writers_are_validated():
    with pytest.raises(ValueError, match="Job.writers: 'all'; use one of rank0, node"):
        Job("bench", "gloo", 10, 2, lambda *_: None, lambda *_: 0, writers="all")


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
