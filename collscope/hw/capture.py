"""What vendor libraries print while they load, caught at the file-descriptor level.

Some vendor bindings write to the process's stdout when imported or initialised: amdsmi 7.x
prints two lines (the loader's error and "Unable to find libamd_smi.so library ...") on a
machine without ROCm's libamd_smi.so, before failing. Printed into `collscope doctor --json`
or `collscope import -o -`, that breaks the JSON. So every import and initialisation of a
vendor library runs inside :func:`captured`, which points file descriptors 1 and 2 at a
temporary file (C-level printf, and Python print when sys.stdout is the terminal's) and,
for Python code, also swaps sys.stdout / sys.stderr (whatever they are); what arrived is kept
per library for ``doctor`` to report as a finding.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout

# Redirecting a file descriptor is process-wide: one capture at a time.
_LOCK = threading.Lock()
_PRINTED: dict[str, str] = {}


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


@contextmanager
def captured(library: str) -> Iterator[None]:
    """Run the body with stdout and stderr (fds 1 and 2) going to a buffer; what the body
    printed is kept under ``library`` (see :func:`printed`)."""
    with _LOCK:
        _flush()
        try:
            sink = tempfile.TemporaryFile()
            saved = [os.dup(1), os.dup(2)]
        except OSError:  # no usable descriptors (a daemon): nothing to protect
            yield
            return
        python = io.StringIO()
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            with redirect_stdout(python), redirect_stderr(python):
                yield
        finally:
            _flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            text = python.getvalue() + sink.read().decode("utf-8", errors="replace")
            sink.close()
            if text.strip():
                _PRINTED[library] = text


def printed() -> dict[str, str]:
    """library -> what it printed at import or initialisation in this process."""
    return dict(_PRINTED)


def forget() -> None:
    """Drop what was kept (tests)."""
    _PRINTED.clear()
