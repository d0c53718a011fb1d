"""Test-only fault injection: the one seam production code consults.

Multi-rank tests plant faults in real ranks through one environment variable, so production
code carries no test logic beyond a call to :func:`planted` at a named site. With the variable
unset (every real run) :func:`planted` returns None and nothing else happens.

``COLLSCOPE_FAULT_INJECT`` holds comma-separated faults ``KIND@RANK[:ARG]``. Kinds in use:

==========  =====================================================================
corrupt@R   bench: rank R adds 1 to the first element of its output before the check
hang@R:N    bench: rank R hangs in the timed loop once N sizes have completed;
            links: rank R hangs in its round once N rounds have completed
kill@R:N    bench: rank R kills itself with SIGKILL once N sizes have completed (what the
            OOM killer does to a rank)
delay@R:MS  bench/links: rank R sleeps MS milliseconds before each launch
            (bench: a late rank; links: a slow sender, its partners wait for its data)
blip@R:MS   links: like delay, in the first measurement only (a transient slowdown that
            the confirmation's re-run clears)
straggle@R:MS  train: rank R sleeps MS milliseconds before each step's backward
disk-full@0:N  records.jsonl: the writing process's JSON Lines / CSV files fail with ENOSPC
            once N records are in them (R is always 0: one process writes)
stdout@R    bench/train/overlap/links/tune ranks, doctor's self-test: rank R writes one line
            straight to file descriptor 1 once its group exists, as torch 2.9's gloo writes
            "[Gloo] Rank 0 is connected to 1 peer ranks" (runtime/stdio.py keeps it off stdout)
fr-skip@R:N  hang's test job (tests/dist/scripts/fr_hang_job.py): rank R sleeps in Python at
            step N instead of entering the collective (a rank that never joins)
fr-op@R:N   hang's test job: rank R calls broadcast at step N where the others all_reduce
fr-size@R:N  hang's test job: rank R passes twice the elements at step N (gloo aborts a rank)
fr-die@R:N  hang's test job: rank R exits at step N without a dump (a crashed rank)
==========  =====================================================================

New kinds are added here, with a line in this table, never as ad-hoc variables elsewhere.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import NoReturn

FAULT_ENV = "COLLSCOPE_FAULT_INJECT"


@dataclass(frozen=True)
class Fault:
    kind: str
    rank: int
    arg: float  # the number after ":" (0 when absent): sizes for hang, ms for delays


def planted(kind: str, rank: int) -> Fault | None:
    """The fault of ``kind`` planted on ``rank``, or None (always None outside tests)."""
    spec = os.environ.get(FAULT_ENV, "")
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, where = item.partition("@")
        target, _, arg = where.partition(":")
        if name == kind and target.isdigit() and int(target) == rank:
            try:
                return Fault(name, rank, float(arg) if arg else 0.0)
            except ValueError:
                return None
    return None


def hang_forever() -> NoReturn:
    """What a hung rank does: nothing, until the watchdog or a signal ends the process."""
    while True:
        time.sleep(60)


def kill_self() -> NoReturn:
    """What a rank the OOM killer picks goes through: SIGKILL, no handler, no last words."""
    import signal

    os.kill(os.getpid(), signal.SIGKILL)
    hang_forever()


def sleep_ms(fault: Fault | None) -> None:
    """Sleep for a planted delay (no-op without one)."""
    if fault is not None and fault.arg > 0:
        time.sleep(fault.arg / 1e3)


def write_to_fd1(rank: int) -> None:
    """A planted stdout@R: one line written to descriptor 1 below Python's streams, as C++
    code does (no-op unless planted on ``rank``)."""
    if planted("stdout", rank) is not None:
        os.write(1, f"planted stdout@{rank}: a library's line on file descriptor 1\n".encode())
