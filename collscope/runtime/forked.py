"""Local ranks forked from a parent that imported torch once, on CPU-only torch builds.

Importing torch costs 1.5-2 s of CPU, paid by every rank a standalone run execs: on a CPU host
that is most of a small run's time (a 4-rank tiny bench on 2 cores: 3.9 s exec'd, 2.2 forked).
So where torch is a CPU-only build, the parent imports it once and forks each rank, as torch's
own DataLoader starts its workers on Linux; the rank then runs ``collscope.cli.main`` with its
rank's environment, the code a rank exec'd by torchrun runs. A GPU build is never forked: a
parent that asked CUDA or HIP for its devices cannot hand a usable driver to a forked child.
``COLLSCOPE_SPAWN=exec`` forces the exec'd ranks anywhere (the path GPU hosts take).

What differs from an exec'd rank, and is handled: the environment is replaced whole (as exec
would), SIGINT is Python's KeyboardInterrupt again, the child dies with its parent
(PR_SET_PDEATHSIG), and it never returns into the parent's stack: it flushes and leaves with
``os._exit``, as an exec'd rank that closed its group does (runtime.spawn.leave_process), so
the parent's exit handlers never run in it. What stays: ``/proc/PID/environ`` and ``cmdline`` show
the parent's (the kernel's copy from its exec); tools that tell ranks apart by those see
``COLLSCOPE_SPAWNED`` only in exec'd ranks.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence

SPAWN_ENV = "COLLSCOPE_SPAWN"          # "exec": never fork ranks


def fork_ranks(environ: dict[str, str] | None = None) -> bool:
    """Fork local ranks here: a CPU-only torch build, not told otherwise, and no other Python
    thread running in this process (doctor's inventory thread, say: a thread caught holding a
    lock, of a stream or a module, would leave that lock held forever in the child)."""
    from collscope.runtime.torch_required import cpu_only_build

    variables = os.environ if environ is None else environ
    return variables.get(SPAWN_ENV, "") != "exec" and sys.platform.startswith("linux") and \
        threading.active_count() == 1 and cpu_only_build()


def preload() -> None:
    """What every rank imports first, imported once in the parent before forking; a torch
    that is installed but does not import is bad input, said in one line."""
    from collscope.runtime.torch_required import unimportable

    try:
        import torch  # noqa: F401
        import torch.distributed  # noqa: F401
    except ImportError as error:
        raise unimportable(error) from None


class ForkedRank:
    """A forked rank, with the part of ``subprocess.Popen`` that spawn_local uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self) -> int:
        code = self._reap(0)
        assert code is not None
        return code

    def _reap(self, flags: int) -> int | None:
        """As Popen: a child already reaped elsewhere (a signal handler's poll interrupting
        a wait, SIGCHLD ignored so the kernel reaped it) reads as exit code 0."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:
                if self.returncode is None:
                    self.returncode = 0
            else:
                if pid and self.returncode is None:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork_rank(argv: Sequence[str], env: dict[str, str], prepare: Callable[[], None],
              entry: Callable[[list[str]], int]) -> ForkedRank:
    """Fork one rank that runs ``entry(ARGV)`` (``collscope ARGV``: the runtime is given the
    CLI's entry point, never imports it) with ``env`` as its whole environment."""
    _flush()                            # or the child would write the parent's buffer again
    parent = os.getpid()
    # Ctrl-C between the fork and the child's own handlers would raise in the parent's stack.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    pid = os.fork()
    if pid:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return ForkedRank(pid)
    code = 1
    try:
        prepare()
        if os.getppid() != parent:      # the parent died before the death signal was set
            os._exit(1)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [sys.argv[0], *argv]  # what an exec'd rank records as its command line
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        code = entry(list(argv))
    except SystemExit as exit_:
        code = _exit_code(exit_)
    except BaseException:  # noqa: BLE001  # the rank must never unwind into the parent's stack
        traceback.print_exc()
    finally:
        try:
            _flush()
        finally:
            os._exit(code)              # even if a signal interrupts the flush
    raise AssertionError("unreachable")    # pragma: no cover


def _exit_code(exit_: SystemExit) -> int:
    """The exit code Python gives a SystemExit: None 0, an int itself, else printed and 1."""
    if exit_.code is None or isinstance(exit_.code, int):
        return exit_.code or 0
    sys.stderr.write(f"{exit_.code}\n")
    return 1


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a reader gone away, a closed stream
            pass

