"""collscope's stdout carries collscope's output only, whatever the libraries beside it print.

C and C++ code in a rank writes to file descriptor 1 directly: torch 2.9's gloo prints
"[Gloo] Rank 0 is connected to 1 peer ranks. ..." in every rank as its group connects, and
NCCL/RCCL write their NCCL_DEBUG lines there unless NCCL_DEBUG_FILE says otherwise. Mixed into
`bench --json -` or `doctor --json`, the output is no longer JSON. So while a rank runs (and
while doctor's in-process self-test connects its gloo ranks), descriptor 1 points at stderr,
where those lines are still seen, and ``sys.stdout`` (collscope's tables and records) writes
to a duplicate of the real stdout. Python code that prints through ``sys.stdout`` still
reaches stdout; C code that writes to descriptor 1 does not.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

# Descriptor 1 is process-wide: the outermost block redirects, nested ones (a rank's doctor
# probes) change nothing.
_LOCK = threading.Lock()
_depth = 0


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):   # a reader gone away, a closed stream
            pass


def _writes_to_fd1(stream: TextIO) -> bool:
    try:
        return stream.fileno() == 1
    except (OSError, ValueError, AttributeError):      # a StringIO, a test's capture
        return False


@contextmanager
def libraries_to_stderr() -> Iterator[None]:
    """While the body runs, writes to descriptor 1 land on stderr; ``sys.stdout`` (when it
    was descriptor 1's stream) writes to the real stdout through a descriptor of its own."""
    global _depth
    with _LOCK:
        _depth += 1
        outermost = _depth == 1
    if not outermost:
        try:
            yield
        finally:
            with _LOCK:
                _depth -= 1
        return
    _flush()
    original = sys.stdout
    try:
        real = os.dup(1)
    except OSError:                  # no descriptor 1 (a daemon): nothing to keep apart
        real = -1
    own = None
    try:
        if real >= 0:
            if _writes_to_fd1(original):
                line_buffered = bool(getattr(original, "line_buffering", False))
                own = open(os.dup(real), "w", buffering=1 if line_buffered else -1,
                           encoding=getattr(original, "encoding", None) or "utf-8",
                           errors=getattr(original, "errors", None) or "strict")
                sys.stdout = own
            os.dup2(2, 1)
        yield
    finally:
        _flush()
        if real >= 0:
            os.dup2(real, 1)
            os.close(real)
        if own is not None:
            if sys.stdout is own:
                sys.stdout = original
            try:
                own.close()
            except (OSError, ValueError):
                pass
        with _LOCK:
            _depth -= 1
