"""Local ranks forked from a parent that imported torch once: what the child runs and how the
parent sees it end (the part of subprocess.Popen that spawn_local uses)."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from collscope.runtime import forked


def _ended(rank: forked.ForkedRank, within_s: float = 30) -> int:
    deadline = time.monotonic() + within_s
    while rank.poll() is None:
        assert time.monotonic() < deadline, "the forked rank never ended"
        time.sleep(0.01)
    return rank.returncode


def test_the_rank_runs_with_exactly_its_environment_and_its_exit_code(tmp_path):
    seen = tmp_path / "seen.json"

    def rank(argv):
        seen.write_text(json.dumps({"argv": argv, "env": dict(os.environ)}))
        return 7

    prepared = tmp_path / "prepared"
    child = forked.fork_rank(["bench", "-b", "1K"], {"RANK": "1", "ONLY": "this"},
                             lambda: prepared.write_text("yes"), rank)
    assert _ended(child) == 7 and child.wait() == 7
    assert json.loads(seen.read_text()) == {"argv": ["bench", "-b", "1K"],
                                            "env": {"RANK": "1", "ONLY": "this"}}
    assert prepared.read_text() == "yes"
    assert os.environ.get("ONLY") is None                  # the parent's is untouched


@pytest.mark.parametrize("body,code", [
    (lambda argv: (_ for _ in ()).throw(SystemExit(3)), 3),
    (lambda argv: (_ for _ in ()).throw(SystemExit(None)), 0),
    (lambda argv: (_ for _ in ()).throw(SystemExit("said and failed")), 1),
    (lambda argv: (_ for _ in ()).throw(RuntimeError("boom")), 1),
    (lambda argv: (_ for _ in ()).throw(KeyboardInterrupt()), 1),
])
def test_whatever_the_rank_raises_it_never_returns_into_the_parent(body, code):
    assert _ended(forked.fork_rank([], {}, lambda: None, body)) == code


def test_the_rank_sees_its_own_command_line(tmp_path):
    import sys

    seen = tmp_path / "argv"
    assert _ended(forked.fork_rank(["links", "-b", "4M"], {}, lambda: None,
                                   lambda argv: seen.write_text(" ".join(sys.argv[1:])) and 0)) == 0
    assert seen.read_text() == "links -b 4M"


def test_a_rank_reaped_elsewhere_reads_as_exit_0_as_popen_says():
    child = forked.fork_rank([], {}, lambda: None, lambda argv: 5)
    os.waitpid(child.pid, 0)                     # a handler's poll got there first
    assert child.poll() == 0 and child.wait() == 0


def test_a_signal_reads_as_popen_reports_it():
    child = forked.fork_rank([], {}, lambda: None, lambda argv: time.sleep(60) or 0)
    child.kill()
    assert child.wait() == -signal.SIGKILL and child.poll() == -signal.SIGKILL
    child.kill()                                 # ended already: nothing to signal, no error


def test_a_real_rank_of_one_runs_collscope(capfd):
    from collscope.cli import main

    child = forked.fork_rank(["--version"], dict(os.environ), lambda: None, main)
    assert child.wait() == 0
    assert capfd.readouterr().out.startswith("collscope ")


def _only_the_main_thread() -> None:
    """fork_ranks counts threads: one an earlier test left alive is named, not a bare False."""
    import threading

    others = [thread.name for thread in threading.enumerate()
              if thread is not threading.main_thread()]
    assert others == [], f"threads an earlier test left running: {others}"


def test_fork_only_on_a_cpu_build_and_not_when_told_exec(monkeypatch):
    _only_the_main_thread()
    monkeypatch.setattr("collscope.runtime.torch_required.cpu_only_build", lambda: True)
    assert forked.fork_ranks({}) is True
    assert forked.fork_ranks({forked.SPAWN_ENV: "exec"}) is False
    monkeypatch.setattr("collscope.runtime.torch_required.cpu_only_build", lambda: False)
    assert forked.fork_ranks({}) is False


def test_never_forked_while_another_thread_runs(monkeypatch):
    import threading

    _only_the_main_thread()
    monkeypatch.setattr("collscope.runtime.torch_required.cpu_only_build", lambda: True)
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    thread.start()
    try:
        assert forked.fork_ranks({}) is False
    finally:
        release.set()
        thread.join()
    assert forked.fork_ranks({}) is True
