"""Running vendor and system tools: argument lists (never a shell), a timeout, no exceptions.

Used by the hw backends' command-line fallbacks and by doctor's probes, so every external tool
collscope runs goes through one place.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Captured output beyond this is cut: a tool gone wild must not exhaust memory or a bundle.
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
# Vendor tools are often installed off PATH (ROCm) or in sbin (lspci, ibv tools for root).
EXTRA_TOOL_DIRS = ("/opt/rocm/bin", "/usr/sbin", "/sbin")
CLI_TIMEOUT_S = 20.0
ToolRunner = Callable[[Sequence[str]], "str | None"]


@dataclass
class ToolRun:
    """How one command went: ok, missing, timeout or error (non-zero exit, cannot start)."""

    file: str
    argv: list[str]
    status: str
    returncode: int | None = None
    seconds: float = 0.0
    path: str | None = None
    stderr: str = ""


def find_tool(name: str, path: str | None = None) -> str | None:
    """The executable ``name`` on PATH, else in the usual off-PATH ROCm/sbin directories."""
    found = shutil.which(name, path=path)
    if found:
        return found
    extra = os.pathsep.join(d for d in EXTRA_TOOL_DIRS if os.path.isdir(d))
    return shutil.which(name, path=extra) if extra and path is None else None


def run_command(argv: Sequence[str], timeout_s: float, path: str | None = None,
                file: str = "") -> tuple[ToolRun, str | None]:
    """Run one tool; (what happened, its stdout or None). Never raises for tool trouble.

    The child gets its own session so a timeout kills the whole process group: a wedged
    rocm-smi often leaves helper processes holding the output pipe open. Output is kept even
    with a non-zero exit: rocm-smi can exit non-zero after printing valid tables.
    """
    start = time.monotonic()
    exe = find_tool(argv[0], path)
    run = ToolRun(file, list(argv), "missing")
    if exe is None:
        return run, None
    run.path = exe
    env = dict(os.environ, LC_ALL="C", LANG="C")
    try:
        child = subprocess.Popen([exe, *argv[1:]], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True, env=env)
    except OSError as error:
        run.status, run.stderr = "error", f"cannot start: {error}"
        return run, None
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        try:
            out, err = child.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            out, err = b"", b""
        run.status = "timeout"
        run.seconds = round(time.monotonic() - start, 3)
        run.stderr = f"no answer within {timeout_s:g} s; killed"
        return run, _decode(out) or None
    run.returncode = child.returncode
    run.seconds = round(time.monotonic() - start, 3)
    run.stderr = _decode(err)[-2000:].strip()
    run.status = "ok" if child.returncode == 0 else "error"
    return run, _decode(out) or None


def tool_output(argv: Sequence[str], timeout_s: float = CLI_TIMEOUT_S) -> str | None:
    """stdout of a tool, or None when it is missing, prints nothing or outlives the timeout."""
    run, text = run_command(argv, timeout_s)
    if run.status == "timeout" or not (text and text.strip()):
        return None
    return text


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()


def _decode(data: bytes | None) -> str:
    return (data or b"")[:MAX_OUTPUT_BYTES].decode("utf-8", errors="replace")
