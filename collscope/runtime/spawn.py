"""Standalone mode: spawn N local ranks of this same command, joined by a c10d rendezvous.

The children get the variables torchrun would give them (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) and initialise through env://, so they
run exactly the code path of a torchrun launch. They are exec'd (``python -m collscope``), or,
on a CPU-only torch build, forked from this parent once it imported torch (runtime.forked: the
ranks start without importing it again). The parent owns their lifetime: a rank killed by
a signal gives the others the collective timeout to notice and exit before they are killed (a
rank that exits with its own code: KILL_GRACE_S), Ctrl-C is forwarded, and children die with
the parent (PR_SET_PDEATHSIG) so no rank is left orphaned.

A rank that dies by a signal is named with the signal; for SIGKILL (what the kernel's OOM
killer sends, and what a cgroup memory limit ends in) the parent adds that hint and the rank's
last memory it sampled. A rank whose stdout reader went away (``collscope bench | head``) exits
with PIPE_CLOSED_EXIT_CODE: the user has read enough, so the other ranks are ended at once.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from collscope.console import SPAWNED_ENV
from collscope.errors import ExitCode

# Seconds the parent gives surviving ranks after a rank exited with its own code (or after
# Ctrl-C), and beyond the collective timeout after a rank a signal ended, before killing them.
KILL_GRACE_S = 10.0
INTERRUPTED_EXIT_CODE = ExitCode.INTERRUPTED
PIPE_CLOSED_EXIT_CODE = ExitCode.PIPE_CLOSED
# Seconds between samples of each rank's memory (for the message if it is killed).
MEMORY_SAMPLE_S = 0.25
# A signal death is reported once it is this old, unless a rank exited PIPE_CLOSED_EXIT_CODE
# meanwhile (that rank ends its peers by SIGKILL just before it exits itself).
REPORT_AFTER_S = 0.3


def quiet_closed_stdout() -> None:
    """Point stdout at /dev/null after its reader went away, so that the interpreter's final
    flush does not raise a second BrokenPipeError (the recipe of Python's signal docs)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


# Set by spawn_local: this process was the parent of local ranks (leave_process reads it).
spawned_ranks = False
# What a local rank runs, ``collscope ARGV`` -> exit code: the CLI gives its entry point as it
# starts (cli.main), so the runtime never imports the CLI. Without one (the library called
# from elsewhere), ranks are exec'd as ``python -m collscope``.
rank_entry: Callable[[list[str]], int] | None = None


def _forked_rank(argv: list[str]) -> int:
    """What ``python -m collscope ARGV`` does in an exec'd rank (cli.run), in a forked one."""
    global spawned_ranks
    spawned_ranks = False               # this process is a rank, not the parent of ranks
    assert rank_entry is not None       # spawn_local forks only when it is given
    return leave_process(rank_entry(argv))


def leave_process(code: int, exit_now: Callable[[int], object] = os._exit) -> int:
    """The exit code for ``SystemExit``, or, in a rank that closed its own group or the
    parent of local ranks, exit now.

    gloo's C++ worker threads can outlive ``destroy_process_group`` (a DDP reducer keeps the
    group alive). If the interpreter then finalizes, a late worker that takes the GIL to free a
    tensor is ended by ``pthread_exit`` inside a noexcept destructor: "terminate called without
    an active exception" and SIGABRT, turning a finished run into a failed rank. By this point
    every result is written and closed (the commands close their writers as they return), so
    the rank flushes its streams and leaves without finalization, as the failure paths do.
    The parent of local ranks writes nothing but its messages: it leaves the same way, which
    spares it torch's finalization (a third of a second)."""
    dist = sys.modules.get("collscope.runtime.dist")
    if not spawned_ranks and not getattr(dist, "owned_group_closed", False):
        return code
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a reader gone away, or a closed stream
            pass
    exit_now(code)
    return code


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _prepare_child() -> None:
    """Runs in the child before exec: SIGKILL it when the parent dies, however it dies, and
    let Ctrl-C interrupt it even when the parent was started with SIGINT ignored (as shells
    start background jobs), since an ignored SIGINT would be inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except OSError:
        pass


def process_memory(pid: int, proc: str = "/proc") -> tuple[int, int] | None:
    """(resident bytes now, resident high-water mark) of a process, from /proc; None if gone."""
    try:
        with open(f"{proc}/{pid}/status", encoding="ascii", errors="replace") as status:
            text = status.read()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM") and rest.split():
            values[name] = int(rest.split()[0]) * 1024
    if "VmRSS" not in values:
        return None
    return values["VmRSS"], values.get("VmHWM", values["VmRSS"])


def death_message(rank: int, pid: int, returncode: int,
                  memory: tuple[int, int] | None) -> str:
    """What the parent says about a rank that a signal ended (``returncode`` < 0)."""
    from collscope.units import format_size

    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    line = f"collscope: rank {rank} (pid {pid}) was killed by {name} (signal {number})"
    if number == signal.SIGKILL:
        line += ("; SIGKILL is what the kernel's OOM killer (or a cgroup memory limit) sends, "
                 "so running out of memory is the usual cause: look for 'Out of memory' or "
                 "'oom-kill' in `dmesg` / `journalctl -k`")
        if memory is not None:
            line += (f"; its last known memory: resident {format_size(memory[0])}, peak "
                     f"{format_size(memory[1])}")
    return line


def combined_exit_code(codes: Sequence[int | None]) -> int:
    """One exit code for the job: usage errors first, then wrong results, then the first failure.

    Ranks killed by the parent after another failed (negative codes) are consequences, not
    causes, so a rank's own non-zero exit wins over them.
    """
    done = [c for c in codes if c is not None]
    if PIPE_CLOSED_EXIT_CODE in done:
        return PIPE_CLOSED_EXIT_CODE  # the reader stopped reading; the rest was ended by us
    for wanted in (2, 3):
        if wanted in done:
            return wanted
    if INTERRUPTED_EXIT_CODE in done:
        return INTERRUPTED_EXIT_CODE
    own = [c for c in done if c > 0]
    if own:
        return own[0]
    return 1 if any(c != 0 for c in done) else 0


def kill_grace_s(codes: Sequence[int | None], interrupted: bool, timeout_s: float,
                 ) -> float | None:
    """Seconds the surviving ranks get to exit by themselves; None while nothing went wrong.

    A rank that exited with its own code (bad input on that rank, a failure it reported) has
    said why: the others get KILL_GRACE_S. A rank a signal ended said nothing, so its peers get
    the collective timeout to notice and name the step they were waiting in.
    """
    if interrupted or any(code is not None and code > 0 for code in codes):
        return KILL_GRACE_S
    if any(code is not None and code < 0 for code in codes):
        return timeout_s + KILL_GRACE_S
    return None


def spawn_local(nproc: int, argv: Sequence[str], timeout_s: float) -> int:
    """Run ``python -m collscope ARGV`` as ``nproc`` ranks on this machine; the job's exit code."""
    from collscope.runtime import forked

    global spawned_ranks
    spawned_ranks = True
    port = free_loopback_port()
    fork = rank_entry is not None and forked.fork_ranks()
    if fork:
        forked.preload()
    children: list[subprocess.Popen[bytes] | forked.ForkedRank] = []
    for rank in range(nproc):
        env = dict(os.environ)
        env.update({
            SPAWNED_ENV: "1", "RANK": str(rank), "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": "0",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        })
        children.append(forked.fork_rank(argv, env, _prepare_child, _forked_rank) if fork else
                        subprocess.Popen([sys.executable, "-m", "collscope", *argv], env=env,
                                         preexec_fn=_prepare_child))

    interrupted = False

    def forward(signum: int, _frame: object) -> None:
        nonlocal interrupted
        interrupted = True
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    memory: dict[int, tuple[int, int]] = {}
    ended_by_us: set[int] = set()
    reported: set[int] = set()
    seen: dict[int, float] = {}
    next_sample = 0.0
    try:
        kill_at = float("inf")
        while None in [child.poll() for child in children]:  # poll each: sets returncode
            now = time.monotonic()
            if now >= next_sample:
                next_sample = now + MEMORY_SAMPLE_S
                for rank, child in enumerate(children):
                    sample = process_memory(child.pid) if child.returncode is None else None
                    if sample is not None:
                        memory[rank] = sample
            if any(child.returncode == PIPE_CLOSED_EXIT_CODE for child in children):
                for rank, child in enumerate(children):  # nobody reads the output any more
                    if child.poll() is None:
                        ended_by_us.add(rank)
                        child.kill()
                        child.wait()
                break
            _report_deaths(children, memory, ended_by_us | reported, interrupted, reported,
                           seen)
            grace = kill_grace_s([child.returncode for child in children], interrupted,
                                 timeout_s)
            if grace is not None:  # the earliest deadline stands (a later exit never extends it)
                kill_at = min(kill_at, now + grace)
            if now > kill_at:
                for rank, child in enumerate(children):
                    if child.poll() is None:
                        why = "after Ctrl-C" if interrupted else "after a peer failed"
                        sys.stderr.write(f"collscope: rank {rank} did not exit {why}; "
                                         "killing it\n")
                        ended_by_us.add(rank)
                        child.kill()
                        child.wait()
            time.sleep(0.05)
        _report_deaths(children, memory, ended_by_us | reported, interrupted, reported, seen,
                       final=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    if interrupted:
        return INTERRUPTED_EXIT_CODE
    return combined_exit_code([child.returncode for child in children])


def _report_deaths(children: Sequence[Any],
                   memory: dict[int, tuple[int, int]], skip: set[int], interrupted: bool,
                   reported: set[int], seen: dict[int, float], final: bool = False) -> None:
    """Say, once per rank, which rank a signal ended (not the ones this parent ended, nor the
    peers a rank ended after its stdout reader went away). ``seen``: when each death was
    first noticed; ``final``: every rank has exited, report without waiting."""
    if any(child.returncode == PIPE_CLOSED_EXIT_CODE for child in children):
        return
    now = time.monotonic()
    for rank, child in enumerate(children):
        code = child.returncode
        if code is None or code >= 0 or rank in skip:
            continue
        if not final and now - seen.setdefault(rank, now) < REPORT_AFTER_S:
            continue
        if interrupted and -code in (signal.SIGINT, signal.SIGTERM):
            continue  # the user's Ctrl-C, forwarded
        sys.stderr.write(death_message(rank, child.pid, code, memory.get(rank)) + "\n")
        sys.stderr.flush()
        reported.add(rank)
