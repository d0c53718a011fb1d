"""Running the wrapped command: no shell, Ctrl-C forwarded, nothing left behind.

The command starts through a tiny Python launcher that asks the kernel to SIGKILL it when
collscope dies (PR_SET_PDEATHSIG survives exec) and then execs the command, so the pid we see
is the command's own. A launcher is used instead of ``preexec_fn`` because monitor has threads
running (sampler, exporter) and ``preexec_fn`` is not safe in a threaded process.

Signals: SIGTERM is always forwarded. SIGINT is forwarded unless it came from the terminal the
command shares with us (then the terminal already delivered it to the whole foreground process
group, and a second SIGINT would interrupt the command's own cleanup). A command still alive
``kill_grace_s`` after a signal is killed together with its descendants.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from collscope.errors import UsageError

KILL_GRACE_S = 10.0
POLL_S = 0.2

_LAUNCHER = """\
import ctypes, os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[1]):
    os._exit(137)  # the parent died before prctl took effect
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as error:
    sys.stderr.write(f"collscope: cannot run {sys.argv[2]!r}: {error.strerror}\\n")
    os._exit(127)
"""


def check_command(argv: Sequence[str]) -> None:
    """Fail with a usage error (exit 2) before anything starts when the command cannot run."""
    if not argv:
        raise UsageError("COMMAND: nothing to run after '--'")
    program = argv[0]
    if os.sep in program:
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise UsageError(f"COMMAND: {program!r} is not an executable file")
    elif shutil.which(program) is None:
        raise UsageError(f"COMMAND: {program!r} not found on PATH")


def start_command(argv: Sequence[str],
                  env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` (a list, never a shell line) as a child that dies with us (``env``:
    its environment, ours when None)."""
    check_command(argv)
    # -S -E: the launcher runs no sitecustomize (neither the job's nor collscope watch's
    # bootstrap: they belong to the command it becomes) and reads no PYTHON* variables.
    return subprocess.Popen([sys.executable, "-S", "-E", "-c", _LAUNCHER, str(os.getpid()),
                             *argv], env=env)


def exit_status(returncode: int) -> int:
    """A shell's view of the child's end: its code, or 128 + N when signal N killed it."""
    return 128 - returncode if returncode < 0 else returncode


def terminal_sent_sigint() -> bool:
    """True when our stdin is a terminal whose foreground process group is ours: a Ctrl-C
    there reaches the command (same group) without our help."""
    try:
        fd = sys.stdin.fileno()
        return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def descendants(pid: int) -> list[Any]:
    """psutil.Process objects of every descendant of ``pid`` (empty once it is gone)."""
    import psutil

    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def kill_all(processes: list[Any]) -> None:
    """SIGKILL each psutil process still running (psutil checks the pid was not reused)."""
    import psutil

    for victim in processes:
        try:
            victim.kill()
        except psutil.Error:
            pass


def kill_tree(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command and every descendant, then reap the command."""
    tree = descendants(process.pid)
    try:
        process.kill()
    except ProcessLookupError:
        pass
    kill_all(tree)
    process.wait()


def supervise(process: subprocess.Popen[bytes], kill_grace_s: float = KILL_GRACE_S) -> int:
    """Wait for the command; forward SIGINT/SIGTERM; kill it if it outlives the grace period.

    After a signal, the command's descendants are remembered on every poll, and those still
    alive when the command has ended are killed: an interrupted run leaves no orphan behind.
    Returns the command's exit status (128 + N for death by signal N).
    """
    signalled_at: list[float] = []
    tree: dict[int, Any] = {}

    def forward(signum: int, _frame: object) -> None:
        signalled_at.append(time.monotonic())
        if signum == signal.SIGINT and terminal_sent_sigint():
            return
        try:
            process.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            if signalled_at:
                tree.update((child.pid, child) for child in descendants(process.pid))
            try:
                return exit_status(process.wait(timeout=POLL_S))
            except subprocess.TimeoutExpired:
                pass
            if signalled_at and time.monotonic() - signalled_at[0] > kill_grace_s:
                sys.stderr.write(f"collscope monitor: command still running {kill_grace_s:g} s "
                                 "after the signal; killing it and its children\n")
                kill_tree(process)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if process.poll() is None:
            kill_tree(process)
        kill_all(list(tree.values()))
