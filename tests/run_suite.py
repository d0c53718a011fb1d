"""`make test`: the whole suite, in the time two cores allow, without a timing test ever
competing for a core.

1. The unit tests, on every core (pytest-xdist), at normal priority: some bound a wall time of
   their own (a sampler's period, a probe's timeout), so nothing else runs beside them.
2. The tests marked ``serial`` (they judge speed or wall time: lateness, bandwidth, how soon
   every rank exits), one at a time at normal priority, and beside them, on every core at the
   lowest CPU priority (nice 19), the other tests of tests/dist and tests/e2e (real ranks and
   real commands that judge only correctness). A serial test's ranks leave a core idle while
   they wait on each other; the low-priority pass uses that time, and the kernel's scheduler
   gives a serial test's process the core back as soon as it wants it.

The low-priority pass writes to a log that is printed once both have ended. The exit code is
0 when every pass passed, else that of the first that failed. Extra arguments go to every
pytest run (``python tests/run_suite.py -x``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-q"]
PARALLEL = ["-n", "auto", "--dist", "loadfile"]
UNIT = [*PYTEST, *PARALLEL, "tests/unit", "--durations", "10"]
SERIAL = [*PYTEST, "-m", "serial", "--durations", "20"]
BESIDE = [*PYTEST, *PARALLEL, "-m", "not serial", "tests/dist", "tests/e2e", "--durations", "10"]
LOWEST_PRIORITY = 19


def _lowest_priority() -> None:
    os.nice(LOWEST_PRIORITY)        # inherited by every rank and command the tests start


def run(extra: Sequence[str]) -> int:
    codes = [subprocess.call([*UNIT, *extra], cwd=REPO)]
    with tempfile.TemporaryFile(mode="w+") as log:
        beside = subprocess.Popen([*BESIDE, *extra], cwd=REPO, stdout=log,
                                  stderr=subprocess.STDOUT, preexec_fn=_lowest_priority)
        try:
            codes.append(subprocess.call([*SERIAL, *extra], cwd=REPO))
            codes.append(beside.wait())
        finally:
            if beside.poll() is None:       # interrupted: end the other pass too
                beside.kill()
                beside.wait()
        log.seek(0)
        sys.stdout.write("\n--- tests/dist and tests/e2e beside the serial ones "
                         f"(nice {LOWEST_PRIORITY}) ---\n" + log.read())
    # pytest's 5 is "no tests collected": a filter in extra may leave a pass empty.
    failed = [code for code in codes if code not in (0, 5)]
    return failed[0] if failed else 0


if __name__ == "__main__":
    try:
        raise SystemExit(run(sys.argv[1:]))
    except KeyboardInterrupt:
        raise SystemExit(130) from None
