"""The wrapped command: exit codes, missing commands, signal forwarding, no orphans."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import psutil
import pytest

from collscope.errors import UsageError
from collscope.monitor.sources import ProcessTreeSource
from collscope.monitor.wrap import check_command, exit_status, start_command, supervise


@pytest.mark.parametrize("returncode, status", [(0, 0), (7, 7), (-2, 130), (-9, 137),
                                                (-15, 143)])
def test_exit_status(returncode, status):
    assert exit_status(returncode) == status


@pytest.mark.parametrize("argv, text", [
    ([], "nothing to run"),
    (["collscope-no-such-program-xyz"], "not found on PATH"),
    (["/nonexistent/bin/tool"], "not an executable file"),
])
def test_check_command(argv, text):
    with pytest.raises(UsageError, match=f"COMMAND: .*{text}|COMMAND: {text}"):
        check_command(argv)


def test_command_runs_without_a_shell_and_keeps_its_pid_and_code(tmp_path):
    marker = tmp_path / "pid"
    process = start_command([sys.executable, "-c",
                             "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); "
                             "sys.exit(5)", str(marker), "$HOME;*"])
    assert supervise(process) == 5
    assert int(marker.read_text()) == process.pid   # exec'd in place: the pid is the command's


def wait_for(path, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.02)
    return path.read_text()


STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)"])
open(sys.argv[1], "w").write(f"{os.getpid()} {child.pid}")
time.sleep(60)
"""


def test_sigint_is_forwarded_and_a_stubborn_tree_is_killed_after_the_grace(tmp_path):
    pids_file = tmp_path / "pids"
    process = start_command([sys.executable, "-c", STUBBORN, str(pids_file)])
    command_pid, grandchild_pid = map(int, wait_for(pids_file).split())

    def interrupt_once_supervise_listens() -> None:
        while signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            time.sleep(0.01)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_supervise_listens, daemon=True).start()
    started = time.monotonic()
    status = supervise(process, kill_grace_s=1.0)
    assert status == 128 + signal.SIGKILL          # ignored SIGINT, then killed
    assert time.monotonic() - started < 8
    assert process.pid == command_pid
    deadline = time.monotonic() + 5
    while psutil.pid_exists(grandchild_pid) and \
            psutil.Process(grandchild_pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "grandchild left running"
        time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # restored


def test_process_tree_source_counts_children(tmp_path):
    pids_file = tmp_path / "pids"
    process = start_command([sys.executable, "-c", STUBBORN, str(pids_file)])
    try:
        wait_for(pids_file)
        source = ProcessTreeSource(process.pid)
        reading = source.read()
        assert reading.gauges["proc.count"] == 2
        assert reading.gauges["proc.rss_bytes"] > 1_000_000
        assert reading.counters["proc.cpu_seconds"] > 0
        assert ProcessTreeSource().read().gauges == {}   # no command yet: nothing
    finally:
        process.kill()
        for child in psutil.Process().children(recursive=True):
            child.kill()
        process.wait()
