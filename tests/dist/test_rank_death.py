"""A rank that dies without a word (SIGKILL, as the OOM killer sends) is named by the parent,
and `collscope bench | head` ends quietly with no rank left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from collscope.runtime.spawn import death_message, process_memory
from tests.helpers import REPO, cli_env, local_rank_pids, run_cli

pytestmark = pytest.mark.dist
MARKER = "CS_TEST_MARKER"


def test_death_message_names_rank_signal_and_oom_hint():
    line = death_message(1, 4242, -signal.SIGKILL, (300 * 1024**2, 512 * 1024**2))
    assert "rank 1 (pid 4242) was killed by SIGKILL (signal 9)" in line
    assert "OOM killer" in line and "dmesg" in line
    assert "resident 300 MiB, peak 512 MiB" in line
    assert "OOM" not in death_message(0, 1, -signal.SIGSEGV, None)
    assert "SIGSEGV (signal 11)" in death_message(0, 1, -signal.SIGSEGV, None)


def test_process_memory_reads_this_process():
    now, peak = process_memory(os.getpid())
    assert 0 < now <= peak
    assert process_memory(2**22 + 12345) is None


def test_rank_killed_by_sigkill_is_named_by_the_parent():
    proc = run_cli("bench", "-e", "64K", "-n", "2", "-w", "1", "--timeout", "20",
                   env=cli_env(COLLSCOPE_FAULT_INJECT="kill@1:2"), timeout=90)
    assert proc.returncode == 1
    assert "rank 1 (pid" in proc.stderr and "killed by SIGKILL" in proc.stderr
    assert "OOM killer" in proc.stderr and "last known memory: resident" in proc.stderr
    # The survivor says its peer went away and where to look, not just "connection closed".
    assert "rank 0: " in proc.stderr and "a peer rank died" in proc.stderr
    assert "Traceback" not in proc.stderr


def _our_processes(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if f"{MARKER}={marker}".encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.serial   # bounds how soon every rank is gone
def test_bench_piped_into_head_ends_quietly_and_leaves_no_rank():
    marker = uuid.uuid4().hex
    proc = subprocess.Popen([sys.executable, "-m", "collscope", "bench", "-e", "64M"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=cli_env(**{MARKER: marker}), cwd=REPO)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]   # what `head -3` reads
        proc.stdout.close()
        started = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert all(lines)
    assert time.monotonic() - started < 30   # not the collective timeout (300 s)
    assert stderr == b"", stderr.decode()     # quietly: no traceback, no "peer died" line
    assert proc.returncode == 141
    deadline = time.monotonic() + 5
    while _our_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _our_processes(marker) == []


def _memory_cgroup(limit_bytes: int) -> Path | None:
    """A child of this process's memory cgroup (v2 or v1) limited to ``limit_bytes``."""
    name = f"collscope-test-{uuid.uuid4().hex[:8]}"
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        candidates = []
        if controllers == "":
            candidates.append((Path("/sys/fs/cgroup/unified") / path.lstrip("/"), "memory.max"))
            candidates.append((Path("/sys/fs/cgroup") / path.lstrip("/"), "memory.max"))
        elif "memory" in controllers.split(","):
            candidates.append((Path("/sys/fs/cgroup/memory") / path.lstrip("/"),
                               "memory.limit_in_bytes"))
        for parent, limit_file in candidates:
            group = parent / name
            try:
                group.mkdir()
            except OSError:
                continue
            try:
                (group / limit_file).write_text(str(limit_bytes))
                swap = group / "memory.memsw.limit_in_bytes"
                if swap.exists():
                    swap.write_text(str(limit_bytes))
                if limit_file == "memory.max" and (group / "memory.swap.max").exists():
                    (group / "memory.swap.max").write_text("0")
                return group
            except OSError:
                group.rmdir()
    return None


@pytest.mark.serial   # races rank 1 to the cgroup before it allocates
def test_rank_in_a_memory_limited_cgroup_is_named_with_its_signal():
    # Charged from the move on: room for the rendezvous (and for torch, ~200 MiB, in a rank
    # that imports it itself rather than sharing its forked parent's), not for the larger
    # all_gathers' buffers (256 MiB out + 128 MiB in on each of the 2 ranks at 256 MiB).
    group = _memory_cgroup(320 * 1024**2)
    if group is None:
        pytest.skip("no writable memory cgroup (needs root and cgroup v1/v2 memory)")
    marker = uuid.uuid4().hex
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "collscope", "bench", "all_gather", "-b", "8M", "-e", "256M",
             "-f", "32", "-n", "2", "-w", "1", "-c", "0", "--timeout", "10"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=cli_env(**{MARKER: marker}), cwd=REPO)
        # Move rank 1 into the cgroup as soon as it exists, before it allocates buffers.
        deadline = time.monotonic() + 30
        moved = False
        while not moved and time.monotonic() < deadline and proc.poll() is None:
            ranks = local_rank_pids(proc.pid)
            if len(ranks) == 2:
                (group / "cgroup.procs").write_text(str(ranks[1]))
                moved = True
            time.sleep(0.02)
        assert moved, "rank 1 never started"
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    assert proc.returncode == 1, stderr
    assert "rank 1 (pid" in stderr and "killed by SIGKILL" in stderr, stderr
    assert "OOM killer" in stderr
