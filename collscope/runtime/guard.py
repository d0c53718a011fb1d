"""One failure guard for every measuring step: name the step for the watchdog, and turn a
backend error into a RankFailure that says which rank, which step, and (when a peer vanished)
where to look for the cause."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch.distributed as dist

from collscope.errors import RankFailure

# What gloo, NCCL and RCCL say when the rank at the other end of a connection went away.
PEER_GONE = re.compile(
    r"connection (closed|reset) by (remote )?peer|broken pipe|remote process exited|"
    r"connection refused|communicator was aborted|end of file|socket ?closed", re.I)
PEER_GONE_HINT = ("a peer rank died or closed its connection: a standalone run names it on "
                  "its own line; under torchrun/srun/mpirun read the dead rank's own log and "
                  "its node's `dmesg` (a rank the OOM killer ends with SIGKILL leaves no "
                  "message)")


def first_line(error: BaseException) -> str:
    """The error's first line, without a backend's "[/path/file.cc:78] " prefix."""
    text = str(error).strip()
    line = text.splitlines()[0] if text else repr(error)
    return re.sub(r"^\[[^\]]*\]\s*", "", line)


def describe(rank: int, what: str, error: BaseException) -> str:
    message = f"rank {rank}: {what} failed: {first_line(error)}"
    if PEER_GONE.search(str(error)):
        message += f" ({PEER_GONE_HINT})"
    return message


@contextmanager
def guard(session: Any, what: str) -> Iterator[None]:
    """Run a step under the watchdog as ``what``; a backend failure becomes a RankFailure."""
    with session.watchdog.step(what):
        try:
            yield
        except (RuntimeError, dist.DistError) as error:
            if isinstance(error, RankFailure):
                raise
            raise RankFailure(describe(session.rank, what, error)) from error
