import io
import sys
from types import SimpleNamespace

from collscope.runtime.spawn import KILL_GRACE_S, combined_exit_code, kill_grace_s, leave_process


def test_combined_exit_code_priorities():
    assert combined_exit_code([0, 0, 0]) == 0
    assert combined_exit_code([0, 3, 0]) == 3
    assert combined_exit_code([2, 2]) == 2
    assert combined_exit_code([1, -9, 1]) == 1
    assert combined_exit_code([-9, -9]) == 1
    assert combined_exit_code([0, 130]) == 130


def test_kill_grace_short_after_a_rank_exits_with_its_own_code():
    assert kill_grace_s([None, None], False, 300.0) is None
    assert kill_grace_s([0, None], False, 300.0) is None
    assert kill_grace_s([None, 2], False, 300.0) == KILL_GRACE_S      # said why; end the rest
    assert kill_grace_s([None, 1], False, 300.0) == KILL_GRACE_S
    assert kill_grace_s([None, -9], False, 300.0) == 300.0 + KILL_GRACE_S  # peers must notice
    assert kill_grace_s([None, None], True, 300.0) == KILL_GRACE_S


def test_spawn_ends_the_job_soon_after_one_rank_exits_with_its_own_code(monkeypatch):
    """Rank 1 exits 2 at once (bad input only it saw); rank 0 would wait forever. The job ends
    after the short grace, not after the collective timeout."""
    import subprocess
    import sys
    import time

    from collscope.runtime import spawn

    script = ("import os, sys, time\n"
              "if os.environ['RANK'] == '1':\n"
              "    sys.exit(2)\n"
              "time.sleep(120)\n")
    real_popen = subprocess.Popen

    def child(args, **kwargs):  # the same children, running the script above
        return real_popen([sys.executable, "-c", script], **kwargs)

    monkeypatch.setattr(spawn.subprocess, "Popen", child)
    monkeypatch.setenv("COLLSCOPE_SPAWN", "exec")     # ranks exec'd, through Popen
    monkeypatch.setattr(spawn, "KILL_GRACE_S", 0.5)
    started = time.monotonic()
    assert spawn.spawn_local(2, ["bench"], timeout_s=60.0) == 2
    assert time.monotonic() - started < 20


class _Stream(io.StringIO):
    flushed = False

    def flush(self) -> None:
        self.flushed = True


def test_a_rank_that_closed_its_group_flushes_and_leaves_without_finalization(monkeypatch):
    exits: list[int] = []
    out, err = _Stream(), _Stream()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setitem(sys.modules, "collscope.runtime.dist",
                        SimpleNamespace(owned_group_closed=True))
    leave_process(3, exit_now=exits.append)
    assert exits == [3] and out.flushed and err.flushed


def test_other_processes_exit_normally(monkeypatch):
    exits: list[int] = []
    monkeypatch.setattr("collscope.runtime.spawn.spawned_ranks", False)
    monkeypatch.setitem(sys.modules, "collscope.runtime.dist",
                        SimpleNamespace(owned_group_closed=False))
    assert leave_process(2, exit_now=exits.append) == 2 and exits == []
    monkeypatch.delitem(sys.modules, "collscope.runtime.dist")      # never joined a group
    assert leave_process(0, exit_now=exits.append) == 0 and exits == []


def test_the_parent_of_local_ranks_leaves_at_once(monkeypatch):
    exits: list[int] = []
    monkeypatch.delitem(sys.modules, "collscope.runtime.dist", raising=False)
    monkeypatch.setattr("collscope.runtime.spawn.spawned_ranks", True)
    leave_process(1, exit_now=exits.append)
    assert exits == [1]


def test_a_closed_stdout_does_not_stop_the_exit(monkeypatch):
    class Gone(_Stream):
        def flush(self) -> None:
            raise BrokenPipeError

    exits: list[int] = []
    monkeypatch.setattr(sys, "stdout", Gone())
    monkeypatch.setitem(sys.modules, "collscope.runtime.dist",
                        SimpleNamespace(owned_group_closed=True))
    leave_process(141, exit_now=exits.append)
    assert exits == [141]
