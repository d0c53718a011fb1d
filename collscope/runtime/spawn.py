"""Standalone mode: spawn N local ranks of this same command, joined by a c10d rendezvous.

The children get the variables torchrun would give them (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) and initialise through env://, so they
run exactly the code path of a torchrun launch. The parent owns their lifetime: a failed rank
gives the others the collective timeout to notice and exit before they are killed, Ctrl-C is
forwarded, and children die with the parent (PR_SET_PDEATHSIG) so no rank is left orphaned.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

SPAWNED_ENV = "COLLSCOPE_SPAWNED"
# Extra seconds beyond the collective timeout before the parent kills surviving ranks.
KILL_GRACE_S = 10.0
INTERRUPTED_EXIT_CODE = 130


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


def combined_exit_code(codes: Sequence[int | None]) -> int:
    """One exit code for the job: usage errors first, then wrong results, then the first failure.

    Ranks killed by the parent after another failed (negative codes) are consequences, not
    causes, so a rank's own non-zero exit wins over them.
    """
    done = [c for c in codes if c is not None]
    for wanted in (2, 3):
        if wanted in done:
            return wanted
    if INTERRUPTED_EXIT_CODE in done:
        return INTERRUPTED_EXIT_CODE
    own = [c for c in done if c > 0]
    if own:
        return own[0]
    return 1 if any(c != 0 for c in done) else 0


def spawn_local(nproc: int, argv: Sequence[str], timeout_s: float) -> int:
    """Run ``python -m collscope ARGV`` as ``nproc`` ranks on this machine; the job's exit code."""
    port = free_loopback_port()
    children: list[subprocess.Popen[bytes]] = []
    for rank in range(nproc):
        env = dict(os.environ)
        env.update({
            SPAWNED_ENV: "1", "RANK": str(rank), "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": "0",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        })
        children.append(subprocess.Popen([sys.executable, "-m", "collscope", *argv], env=env,
                                         preexec_fn=_prepare_child))

    interrupted = False

    def forward(signum: int, _frame: object) -> None:
        nonlocal interrupted
        interrupted = True
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        kill_at = float("inf")
        while any(child.poll() is None for child in children):
            failed = any(child.returncode not in (None, 0) for child in children)
            if (failed or interrupted) and kill_at == float("inf"):
                kill_at = time.monotonic() + (KILL_GRACE_S if interrupted
                                              else timeout_s + KILL_GRACE_S)
            if time.monotonic() > kill_at:
                for rank, child in enumerate(children):
                    if child.poll() is None:
                        why = "after Ctrl-C" if interrupted else "after a peer failed"
                        sys.stderr.write(f"collscope: rank {rank} did not exit {why}; "
                                         "killing it\n")
                        child.kill()
                        child.wait()
            time.sleep(0.05)
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
