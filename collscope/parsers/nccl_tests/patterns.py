"""The line patterns of the reader (matched against the line without its leading '#'s,
unless said otherwise). One compiled pattern a line, all of one shape on purpose: a table."""

from __future__ import annotations

import re

NCCL_TESTS_VERSION = re.compile(
    r"nccl-tests\s+version\s+(\S+)(?:\s+\(([^)]*)\))?(?:\s+nccl-headers=(\d+))?"
    r"(?:\s+nccl-library=(\d+))?", re.I)
RCCL_TESTS_VERSION = re.compile(r"rccl-tests:?\s+version\s*:?\s*(\S+)", re.I)
LIB_VERSION = re.compile(r"(RCCL|NCCL|HIP|ROCm|CUDA)\s+version\s*:?\s*(\S+)\s*$", re.I)
DEBUG_VERSION = re.compile(r"NCCL INFO\s+(NCCL|RCCL) version\s+(\S+)", re.I)
INFO_LINE = re.compile(r"(Hostname|Lib[rn]?ccl path)\s*:\s*(\S.*)$", re.I)
STARTING = re.compile(r"Collective test starting:\s*(\S+)", re.I)
CONCLUDED = re.compile(r"Collective test concluded:\s*(\S+)", re.I)
PARAMS = re.compile(r"nThread:?\s+\d+\s+nGpus:?\s+\d+", re.I)
USING_DEVICES = re.compile(r"Using devices\s*$", re.I)
DEVICE = re.compile(
    r"Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(-?\d+)\s+"
    r"\[([^\]]*)\]\s*(.*)$")
DEVICE_CUT = re.compile(r"Rank\s+\d+\s+(?:Group|Pid)\b")
BANNER = re.compile(r"out-of-place.*in-place", re.I)
OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?", re.I)
AVG = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?", re.I)
BITWISE = re.compile(r"Bitwise mismatches\s*:\s*(\d+)\s*(OK|FAILED)?", re.I)
REDUCING = re.compile(r"Reducing maxBytes to (\d+)", re.I)
CYCLE = re.compile(r"Testing (\d+) cycles?\b", re.I)
SEPARATOR = re.compile(r"={3,}\s*(.*?)\s*={3,}\s*$")
ELLIPSIS = re.compile(r"(?:\.{3,}|…)\s*$")
SNIP = re.compile(r"[<\[(]\s*(?:snip\w*|cut|\.\.\.|…|omitted|truncated)[^>\])]*[>\])]\s*$", re.I)
KNOWN_COMMENT = re.compile(
    r"(?:Errors with asterisks|Blocking Enabled|Parallel Init Enabled|Per-Iteration Report|"
    r"Bitwise Repeatability|Bitwise mismatch \(|GPU memory usage|Writing JSON output|"
    r"skipping json output|Memory type|Check the result)", re.I)
ELISION_COMMENT = re.compile(r"truncat|smaller (?:message )?sizes|omitted|snip|\.\.\.\s*$", re.I)
ERROR_COMMENT = re.compile(r"error:\s*(\S.*)$", re.I)
# Prompts: "$ cmd", "user@host:~$ cmd", "root@host:/x# cmd", "+ cmd" / "++ cmd" (set -x).
PROMPT = re.compile(r"(?:\$|[\w.\-]+@[\w.\-]+(?::[^\s$#]*)?[$#]|\++)\s+(\S.*)$")
# mpirun --tag-output prefixes every line with "[job,rank]<stdout>:".
OUTPUT_TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:\s?")
LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun", "srun", "torchrun", "aprun", "jsrun",
              "flux")
PERF_BINARY = re.compile(r"(\w+?)_perf(?:[_.][\w.]+)?\Z")
NCCL_DEBUG = re.compile(r"(?:^|\s)(?:NCCL|RCCL) (INFO|WARN|TRACE|ERROR|ABORT)\b")
FAILURE = re.compile(
    r"Test (?:NCCL |CUDA |HIP |MPI )?failure|NCCL (?:error|failure)|"
    r"\b(?:CUDA|HIP|Cuda|Hip) (?:error|failure)|unhandled (?:system|cuda|hip|internal) error|"
    r"remote process exited|Segmentation fault|core dumped|terminate called|\bAborted\b|"
    r"exited on signal|mpirun noticed|MPI_ABORT|Primary job\s+terminated|srun: error|"
    r"slurmstepd: error|Invalid number of GPUs|out of memory|Bus error|\bKilled\b|"
    r"\[ERROR\]|^Error:", re.I)
LAUNCHER_NOISE = re.compile(
    r"(?:\[[^\]]*\]|-{5,}|\*{3}|mpirun|mpiexec|prterun|orterun|srun:|salloc:|sbatch:|"
    r"slurmstepd:|cpu[-_]bind[=:]|warning:|Authorization required|Permission denied|ssh:|pdsh@|"
    r"A (?:process|request|high-performance)|An? (?:error|MPI)|Open MPI|Local host:|"
    r"Remote host:|Local device:|Child job|PMIX|pmix|Lmod|module |Loading |"
    r"\S+:\s+/\S+:\s+no version information available)", re.I)
