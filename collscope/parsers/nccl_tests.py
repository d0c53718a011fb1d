"""Parser of nccl-tests / rccl-tests text output, any version: text -> typed records.

What it reads (all optional, in any order nccl-tests ever printed them):

- the command line, from a shell prompt (``$ mpirun ... ./build/all_reduce_perf -b 8 ...``,
  ``user@host:~$ ...``, ``+ ...``; backslash continuation lines are joined) or from a bare line
  that starts with a launcher or a ``*_perf`` binary;
- version lines: ``# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902``,
  ``rccl-tests: Version develop:a7809b3``, ``RCCL version : 2.22.3-HEAD:7d8d67c``,
  ``HIP version  : ...``, ``ROCm version : ...``, ``NCCL version 2.28.7+cuda13.0`` (also inside
  NCCL debug lines), ``Hostname     : ...``, ``Librccl path : ...``;
- ``# Collective test starting: all_reduce_perf`` / ``# Collective test concluded: ...``;
- the parameter line, new (``# nThread 1 nGpus 1 minBytes 8 ... warmup iters: 5 iters: 20 agg
  iters: 1 validation: 1 graph: 0``) and old (``# nThread: 1 nGpus: 1 ... warmupIters: 5``);
- the ``# Using devices`` block, old (``#   Rank  0 Pid  30938 on gpu01 device  0 [0x00] Tesla
  T4``) and new (``#  Rank  0 Group  0 Pid 7085 on host device  0 [0000:05:00] AMD Instinct
  MI300X``) forms, with empty device names and ``...`` elision;
- the table header, new (``root`` and ``#wrong`` columns, optionally ``#bitdiff``, the
  per-iteration ``i_min i_max i_p99 i_cv%`` columns, ``cputime`` and a ``timestamp``) and old (no
  ``root`` column, ``error`` column); the columns of each row are read by the header's names;
- result rows, with both placements, only the out-of-place one (run cut short) or only the
  in-place one (nccl-tests leaves the out-of-place part blank in trace replay); which one a
  single placement is comes from its column position under the header;
- the footer (``# Out of bounds values : N OK|FAILED``, ``# Avg bus bandwidth : X [OK|FAILED]``,
  ``# Bitwise mismatches : N OK|FAILED``), ``# Reducing maxBytes ...``, ``# Testing N cycle.``;
- failure lines (``Test NCCL failure common.cu:1279 '...'``, ``# error: ...``, launcher aborts).

Posted logs are often edited: markdown may strip the leading ``# `` of header lines, grep may
keep only some rows (with ``====== N-node ======`` separators: each separator starts a new test
block labelled with its text, inheriting the command line and versions before it), authors cut
parts (``<snip>``, ``# <smaller message sizes truncated>``), launchers and NCCL debug output
interleave their lines. Every line that is not understood, and every known elision, becomes a
warning naming its line number (runs of the same kind of noise are reported as one range).
Nothing here raises on odd input.

Several tests in one file (one ``*_perf`` run after another) become several ``ParsedTest``
blocks: a new block starts when a line that opens a test (version line, ``Collective test
starting``, parameter line, ``Using devices``) arrives in a block that already has that kind of
line, a result table or ``Collective test concluded``; a table header, a separator or a command
line start one when the block already has a table (a header: rows or a footer); a result row
starts one after a footer or ``concluded``.

Which collective a block measured, in order of trust:

1. the program name of ``# Collective test starting/concluded: X_perf``;
2. the ``*_perf`` binary on the command line;
3. a collective's name as a word of the command line (``rccl-test-allreduce-multi.sh``): a guess,
   warned about;
4. the columns (a guess, warned about): with E the element size of the type column, a count
   column with size = count x E x n (n > 1) means a chunked collective with n ranks:
   ``reduce_scatter`` when redop is a reduction, else ``alltoall`` when the in-place ``#wrong`` is
   N/A while the out-of-place one is checked (nccl-tests does not verify in-place alltoall), else
   ``all_gather``; size = count x E means an unchunked one: with a root >= 0, ``reduce``
   (reduction) or ``broadcast`` (redop none); with root -1 and a reduction, ``all_reduce`` when
   busbw/algbw > 1.1 (its bus factor 2(n-1)/n), else ``sendrecv`` when in-place is not verified,
   else ``all_reduce`` on 2 ranks (bus factor 1 either way). Anything else stays unknown.

The world size (``ParsedTest.world_size`` with ``world_size_method`` saying how): the number of
distinct ranks in the device block; the highest rank + 1 when that block is elided; launcher
ranks (``mpirun -np N``, ``srun -n N``) x nThread x nGpus; size / (count x E) for a chunked
collective; the busbw/algbw ratio inverted through the collective's bus factor, kept only when
exactly one world size reproduces every printed busbw to the printed precision. When the device
block and the table disagree, a warning says so.

Printed numbers are kept exactly: floats parsed from the text plus the printed strings.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field

from collscope.collectives.table import COLLECTIVES, bus_factor, canonical_name
from collscope.parsers.common import Parsed

# Bytes per element of nccl-tests / rccl-tests type names (the "type" column).
ELEMENT_SIZES: dict[str, int] = {
    "int8": 1, "uint8": 1, "char": 1, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
    "half": 2, "float16": 2, "fp16": 2, "bfloat16": 2, "bf16": 2,
    "int32": 4, "uint32": 4, "int": 4, "float": 4, "float32": 4, "fp32": 4,
    "int64": 8, "uint64": 8, "long": 8, "double": 8, "float64": 8, "fp64": 8,
}
REDUCTION_OPS = frozenset({"sum", "prod", "max", "min", "avg", "premulsum", "mulsum"})

# nccl-tests' DeltaMaxValue: the per-rank tolerance of the old "error" column (max abs error);
# a placement fails when its error exceeds this x (nranks - 1).
_DELTA_MAX = {"half": 1e-2, "float16": 1e-2, "fp16": 1e-2, "bfloat16": 5e-2, "bf16": 5e-2,
              "float": 1e-5, "float32": 1e-5, "fp32": 1e-5,
              "double": 1e-12, "float64": 1e-12, "fp64": 1e-12}


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------


@dataclass
class Placement:
    """One placement (out-of-place or in-place) of one row, exactly as printed.

    ``wrong`` is the ``#wrong`` column (mismatched elements; None for N/A or for the old format),
    ``error`` the old ``error`` column (max absolute error; None for N/A or the new format).
    ``over_threshold`` is rccl-tests' asterisk after the value. Extra columns (``#bitdiff``,
    ``i_min`` ...) are in ``more`` as printed.
    """

    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None
    error: float | None
    time_text: str
    algbw_text: str
    busbw_text: str
    check_text: str | None          # the #wrong / error field as printed
    over_threshold: bool = False
    more: dict[str, str] = field(default_factory=dict)

    @property
    def checked(self) -> bool:
        """Whether nccl-tests verified this placement (it printed a value, not N/A)."""
        return self.wrong is not None or self.error is not None


@dataclass
class Row:
    line: int
    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int | None                # None in the old format (no root column)
    out_of_place: Placement | None
    in_place: Placement | None
    cycle: int | None = None        # rccl-tests "# Testing N cycle."
    timestamp: str | None = None

    def placements(self) -> list[tuple[bool, Placement]]:
        """(in_place, placement) for each printed placement, out-of-place first."""
        found: list[tuple[bool, Placement]] = []
        if self.out_of_place is not None:
            found.append((False, self.out_of_place))
        if self.in_place is not None:
            found.append((True, self.in_place))
        return found


@dataclass
class DeviceLine:
    line: int
    rank: int
    group: int | None
    pid: int | None
    host: str
    device: int
    pci: str
    name: str | None


@dataclass
class TestParams:
    """The ``# nThread ...`` line; fields it does not print stay None."""

    line: int
    n_thread: int | None = None
    n_gpus: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    step_bytes: int | None = None
    step_factor: int | None = None
    warmup_iters: int | None = None
    iters: int | None = None
    agg_iters: int | None = None
    validation: int | None = None
    graph: int | None = None
    unalign: int | None = None


@dataclass
class TableHeader:
    line: int
    has_root: bool
    groups: list[list[str]]             # column names per placement, e.g. time algbw busbw #wrong
    timestamp: bool = False
    time_ends: list[int] = field(default_factory=list)  # end column of each placement's time

    @property
    def old_format(self) -> bool:
        return any("error" in group for group in self.groups)


@dataclass
class Footer:
    out_of_bounds: int | None = None
    out_of_bounds_status: str | None = None     # "OK" / "FAILED"
    out_of_bounds_line: int | None = None
    avg_busbw_gbs: float | None = None
    avg_busbw_text: str | None = None
    avg_busbw_status: str | None = None         # NCCL_TESTS_MIN_BW check: "OK" / "FAILED"
    avg_busbw_line: int | None = None
    bitwise_mismatches: int | None = None
    bitwise_status: str | None = None


@dataclass
class CommandLine:
    line: int
    text: str
    argv: list[str]
    program: str | None = None          # basename of the *_perf binary
    launcher: str | None = None         # mpirun, srun, ... as typed
    launcher_ranks: int | None = None   # -np / -n / --ntasks
    env: dict[str, str] = field(default_factory=dict)       # -x, --export, -genv, NAME=VALUE
    test_args: dict[str, str] = field(default_factory=dict)  # options after the binary


@dataclass
class ParsedTest:
    """One nccl-tests run (one ``*_perf`` invocation) found in a log."""

    index: int
    first_line: int
    last_line: int = 0
    label: str | None = None                # separator text, e.g. "1-node"
    program: str | None = None
    collective: str | None = None
    collective_source: str = "unknown"
    commands: list[CommandLine] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    info: dict[str, str] = field(default_factory=dict)  # hostname, librccl path, ...
    params: TestParams | None = None
    devices: list[DeviceLine] = field(default_factory=list)
    devices_elided: bool = False
    header: TableHeader | None = None
    rows: list[Row] = field(default_factory=list)
    reduced_max_bytes: int | None = None
    footer: Footer = field(default_factory=Footer)
    failures: list[tuple[int, str]] = field(default_factory=list)
    notes: list[tuple[int, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    started: bool = False                   # "Collective test starting" seen
    concluded: bool = False
    world_size: int | None = None
    world_size_method: str = "unknown"
    table_world_size: int | None = None     # what the table alone implies, for cross-checks

    @property
    def command(self) -> CommandLine | None:
        """The command line that ran the test: the one naming a *_perf binary, else the first."""
        for command in self.commands:
            if command.program:
                return command
        return self.commands[0] if self.commands else None

    @property
    def hosts(self) -> list[str]:
        seen: dict[str, None] = {}
        for device in self.devices:
            seen.setdefault(device.host, None)
        return list(seen)

    @property
    def result_count(self) -> int:
        return sum(len(row.placements()) for row in self.rows)

    @property
    def has_substance(self) -> bool:
        return bool(self.rows or self.header or self.devices or self.params or self.failures
                    or self.program or self.versions or self.footer.out_of_bounds is not None
                    or self.footer.avg_busbw_text is not None)


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

_INT = re.compile(r"[-+]?\d+\Z")
_NUM = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\Z")


def _int(token: str) -> int | None:
    return int(token) if _INT.match(token) else None


def _num(token: str) -> float | None:
    if not _NUM.match(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def printed_unit(text: str) -> float:
    """Value of one unit in the last printed digit: 0.01 for "12.34", 1 for "47584", 1e5 for
    "1.2e+06". Half of it is the rounding error of the printed number."""
    mantissa, _, exponent = text.strip().lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    try:
        power = int(exponent) if exponent else 0
    except ValueError:
        power = 0
    return 10.0 ** (power - decimals)


def decode_nccl_version_code(code: int) -> str:
    """NCCL_VERSION_CODE to "major.minor.patch" (22902 -> 2.29.2, 2708 -> 2.7.8)."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def element_size(dtype: str) -> int | None:
    return ELEMENT_SIZES.get(dtype.strip().lower())


def error_tolerance(dtype: str, world_size: int | None) -> float | None:
    """The old ``error`` column's pass limit (nccl-tests: DeltaMaxValue(type) x (nranks - 1)).

    Integer types must be exact (limit 0). None where the type or world size is unknown.
    """
    if not world_size or world_size < 1:
        return None
    key = dtype.strip().lower()
    if key in _DELTA_MAX:
        return _DELTA_MAX[key] * max(world_size - 1, 1)
    if key in ELEMENT_SIZES:
        return 0.0
    return None


def _clip(text: str, limit: int = 160) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# Line patterns (matched against the line without its leading '#'s, unless said otherwise)
# ---------------------------------------------------------------------------------------------

_NCCL_TESTS_VERSION = re.compile(
    r"nccl-tests\s+version\s+(\S+)(?:\s+\(([^)]*)\))?(?:\s+nccl-headers=(\d+))?"
    r"(?:\s+nccl-library=(\d+))?", re.I)
_RCCL_TESTS_VERSION = re.compile(r"rccl-tests:?\s+version\s*:?\s*(\S+)", re.I)
_LIB_VERSION = re.compile(r"(RCCL|NCCL|HIP|ROCm|CUDA)\s+version\s*:?\s*(\S+)\s*$", re.I)
_DEBUG_VERSION = re.compile(r"NCCL INFO\s+(NCCL|RCCL) version\s+(\S+)", re.I)
_INFO_LINE = re.compile(r"(Hostname|Lib[rn]?ccl path)\s*:\s*(\S.*)$", re.I)
_STARTING = re.compile(r"Collective test starting:\s*(\S+)", re.I)
_CONCLUDED = re.compile(r"Collective test concluded:\s*(\S+)", re.I)
_PARAMS = re.compile(r"nThread:?\s+\d+\s+nGpus:?\s+\d+", re.I)
_USING_DEVICES = re.compile(r"Using devices\s*$", re.I)
_DEVICE = re.compile(
    r"Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
    r"\[([^\]]*)\]\s*(.*)$")
_DEVICE_CUT = re.compile(r"Rank\s+\d+\s+(?:Group|Pid)\b")
_BANNER = re.compile(r"out-of-place.*in-place", re.I)
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?", re.I)
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?", re.I)
_BITWISE = re.compile(r"Bitwise mismatches\s*:\s*(\d+)\s*(OK|FAILED)?", re.I)
_REDUCING = re.compile(r"Reducing maxBytes to (\d+)", re.I)
_CYCLE = re.compile(r"Testing (\d+) cycles?\b", re.I)
_SEPARATOR = re.compile(r"={3,}\s*(.*?)\s*={3,}\s*$")
_ELLIPSIS = re.compile(r"(?:\.{3,}|…)\s*$")
_SNIP = re.compile(r"[<\[(]\s*(?:snip\w*|cut|\.\.\.|…|omitted|truncated)[^>\])]*[>\])]\s*$", re.I)
_KNOWN_COMMENT = re.compile(
    r"(?:Errors with asterisks|Blocking Enabled|Parallel Init Enabled|Per-Iteration Report|"
    r"Bitwise Repeatability|Bitwise mismatch \(|GPU memory usage|Writing JSON output|"
    r"skipping json output|Memory type|Check the result)", re.I)
_ELISION_COMMENT = re.compile(r"truncat|smaller (?:message )?sizes|omitted|snip|\.\.\.\s*$", re.I)
_ERROR_COMMENT = re.compile(r"error:\s*(\S.*)$", re.I)
# Prompts: "$ cmd", "user@host:~$ cmd", "root@host:/x# cmd", "+ cmd" (bash -x).
_PROMPT = re.compile(r"(?:\$|[\w.\-]+@[\w.\-]+(?::[^\s$#]*)?[$#]|\+)\s+(\S.*)$")
# mpirun --tag-output prefixes every line with "[job,rank]<stdout>:".
_OUTPUT_TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:\s?")
_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun", "srun", "torchrun", "aprun", "jsrun",
              "flux")
_PERF_BINARY = re.compile(r"(\w+?)_perf(?:[_.][\w.]+)?\Z")
_NCCL_DEBUG = re.compile(r"(?:^|\s)(?:NCCL|RCCL) (INFO|WARN|TRACE|ERROR|ABORT)\b")
_FAILURE = re.compile(
    r"Test (?:NCCL |CUDA |HIP |MPI )?failure|NCCL (?:error|failure)|"
    r"\b(?:CUDA|HIP|Cuda|Hip) (?:error|failure)|unhandled (?:system|cuda|hip|internal) error|"
    r"remote process exited|Segmentation fault|core dumped|terminate called|\bAborted\b|"
    r"exited on signal|mpirun noticed|MPI_ABORT|Primary job\s+terminated|srun: error|"
    r"slurmstepd: error|Invalid number of GPUs|out of memory|Bus error|\bKilled\b|"
    r"\[ERROR\]|^Error:", re.I)
_LAUNCHER_NOISE = re.compile(
    r"(?:\[[^\]]*\]|-{5,}|\*{3}|mpirun|mpiexec|prterun|orterun|srun:|salloc:|sbatch:|"
    r"slurmstepd:|warning:|Authorization required|Permission denied|ssh:|pdsh@|"
    r"A (?:process|request|high-performance)|An? (?:error|MPI)|Open MPI|Local host:|"
    r"Remote host:|Local device:|Child job|PMIX|pmix|Lmod|module |Loading |"
    r"\S+:\s+/\S+:\s+no version information available)", re.I)


# ---------------------------------------------------------------------------------------------
# Command lines
# ---------------------------------------------------------------------------------------------

_ENV_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)=(.*)\Z", re.S)


def parse_command_line(text: str, line: int = 0) -> CommandLine:
    """A shell command line: program, launcher rank count, environment it sets, test options."""
    try:
        argv = shlex.split(text, comments=False, posix=True)
    except ValueError:
        argv = text.split()
    command = CommandLine(line=line, text=text, argv=argv)
    program_at = None
    for i, token in enumerate(argv):
        base = token.rstrip("/").rsplit("/", 1)[-1]
        if _PERF_BINARY.match(base) and not base.endswith(":"):
            command.program, program_at = base, i
            break
    before = argv if program_at is None else argv[:program_at]
    # Leading NAME=VALUE assignments, then the launcher and its options.
    i = 0
    while i < len(before) and _ENV_ASSIGNMENT.match(before[i]):
        name, value = _ENV_ASSIGNMENT.match(before[i]).groups()  # type: ignore[union-attr]
        command.env[name] = value
        i += 1
    if i < len(before) and before[i].rsplit("/", 1)[-1] in _LAUNCHERS:
        command.launcher = before[i].rsplit("/", 1)[-1]
    nodes = per_node = None
    j = i
    while j < len(before):
        token = before[j]
        nxt = before[j + 1] if j + 1 < len(before) else ""
        if token == "-x" and _ENV_ASSIGNMENT.match(nxt):
            name, value = _ENV_ASSIGNMENT.match(nxt).groups()  # type: ignore[union-attr]
            command.env[name] = value
            j += 2
            continue
        if token in ("-genv", "-env") and nxt and j + 2 < len(before):
            command.env[nxt] = before[j + 2]
            j += 3
            continue
        if token.startswith("--export="):
            _parse_export(token.removeprefix("--export="), command.env)
        elif token in ("-np", "--np", "-n", "--ntasks", "-c") and _int(nxt) is not None:
            if token != "-c" or command.launcher in ("mpirun", "mpiexec"):
                command.launcher_ranks = _int(nxt)
        elif token.startswith("--ntasks="):
            command.launcher_ranks = _int(token.partition("=")[2])
        elif re.fullmatch(r"-n\d+", token):
            command.launcher_ranks = _int(token[2:])
        elif token == "-N" and command.launcher in ("mpirun", "mpiexec", "orterun", "prterun"):
            per_node = _int(nxt)        # Open MPI: processes per node
        elif token in ("-N", "--nodes") and _int(nxt) is not None:
            nodes = _int(nxt)
        elif re.fullmatch(r"-N\d+", token) or token.startswith("--nodes="):
            nodes = _int(re.sub(r"^(-N|--nodes=)", "", token))
        elif token.startswith("--ntasks-per-node="):
            per_node = _int(token.partition("=")[2])
        elif token == "--ntasks-per-node" and _int(nxt) is not None:
            per_node = _int(nxt)
        j += 1
    if command.launcher_ranks is None and nodes and per_node:
        command.launcher_ranks = nodes * per_node
    if program_at is not None:
        args = argv[program_at + 1:]
        k = 0
        while k < len(args):
            token = args[k]
            if token.startswith("-") and len(token) > 1:
                if "=" in token:
                    key, _, value = token.partition("=")
                    command.test_args[key] = value
                elif len(token) > 2 and not token.startswith("--") and token[1].isalpha():
                    command.test_args[token[:2]] = token[2:]    # -g8
                elif k + 1 < len(args) and not args[k + 1].startswith("-"):
                    command.test_args[token] = args[k + 1]
                    k += 1
                else:
                    command.test_args[token] = ""
            elif token in ("|", ">", ">>", "2>&1", "&&", ";", "|&"):
                break
            k += 1
    return command


def _parse_export(value: str, env: dict[str, str]) -> None:
    last: str | None = None
    for part in value.split(","):
        match = _ENV_ASSIGNMENT.match(part)
        if match:
            last = match.group(1)
            env[last] = match.group(2)
        elif part in ("ALL", "NONE", "NIL", ""):
            continue
        elif last is not None:
            env[last] += "," + part


def _collective_of_program(program: str | None) -> str | None:
    if not program:
        return None
    match = _PERF_BINARY.match(program)
    stem = match.group(1) if match else program
    return canonical_name(stem)


def _collective_word(text: str) -> tuple[str, str] | None:
    """A collective's name used as a word of a command line (a script or log file name):
    "rccl-test-allreduce-multi.sh" -> all_reduce. Options (``-o sum``) are not looked at."""
    best: tuple[str, str] | None = None
    for token in text.split():
        if token.startswith("-"):
            continue
        for word in re.split(r"[^A-Za-z0-9_]+", token):
            parts = [part for part in word.split("_") if part]
            for length in (3, 2, 1):
                for start in range(len(parts) - length + 1):
                    candidate = "_".join(parts[start:start + length])
                    name = canonical_name(candidate)
                    if name and (best is None or len(candidate) > len(best[1])):
                        best = (name, candidate)
    return best


# ---------------------------------------------------------------------------------------------
# The line-by-line reader
# ---------------------------------------------------------------------------------------------

class _Reader:
    def __init__(self) -> None:
        self.tests: list[ParsedTest] = []
        self.block = ParsedTest(index=0, first_line=1)
        self.seen: set[str] = set()
        self.in_devices = False
        self.cycle: int | None = None
        self.continuing: CommandLine | None = None
        self.noise: tuple[str, int, int, str] | None = None     # category, first, last, text
        self.line_no = 0

    # -- blocks --------------------------------------------------------------------------------

    def _has_table(self) -> bool:
        block = self.block
        return bool(block.header or block.rows or block.footer.out_of_bounds is not None
                    or block.footer.avg_busbw_text is not None)

    def _new_block(self, inherit: bool = False) -> None:
        self._flush_noise()
        old = self.block
        old.last_line = max(old.last_line, self.line_no - 1, old.first_line)
        self.tests.append(old)
        block = ParsedTest(index=len(self.tests), first_line=self.line_no)
        if inherit:
            block.commands = list(old.commands)
            block.versions = dict(old.versions)
            block.info = dict(old.info)
            block.program = old.program
            block.params = old.params
        self.block = block
        self.seen = set()
        self.in_devices = False
        self.cycle = None

    def _open(self, kind: str) -> None:
        """Start a new block if a line of ``kind`` cannot belong to the current one."""
        block = self.block
        footer_seen = (block.footer.out_of_bounds is not None
                       or block.footer.avg_busbw_text is not None)
        if kind in ("header", "banner"):
            if block.rows or footer_seen or block.concluded or (
                    kind == "header" and "header" in self.seen):
                self._new_block()
        elif kind == "row":
            if footer_seen or block.concluded:
                self._new_block()
        elif kind == "separator":
            if self._has_table() or block.concluded:
                self._new_block(inherit=True)
        elif kind == "command":
            if self._has_table() or block.concluded:
                self._new_block()
        elif kind in self.seen or self._has_table() or block.concluded:
            self._new_block()

    def _warn(self, message: str) -> None:
        self.block.warnings.append(message)

    # -- noise runs ----------------------------------------------------------------------------

    def _noise(self, category: str, text: str) -> None:
        if self.noise and self.noise[0] == category and self.noise[2] == self.line_no - 1:
            self.noise = (category, self.noise[1], self.line_no, self.noise[3])
            return
        self._flush_noise()
        self.noise = (category, self.line_no, self.line_no, text)

    def _flush_noise(self) -> None:
        if not self.noise:
            return
        category, first, last, text = self.noise
        self.noise = None
        if first == last:
            self._warn(f"line {first}: {category} skipped: {_clip(text)!r}")
        else:
            self._warn(f"lines {first}-{last}: {last - first + 1} lines of {category} skipped, "
                       f"first: {_clip(text)!r}")

    # -- main ----------------------------------------------------------------------------------

    def feed(self, number: int, raw: str) -> None:
        self.line_no = number
        line = _OUTPUT_TAG.sub("", raw.rstrip("\r\n"))
        stripped = line.strip()
        if self.continuing is not None and self._continue_command(stripped):
            return
        if not stripped:
            return
        commented = stripped.startswith("#")
        body = stripped.lstrip("#").strip()
        if not body:
            return
        self._classify(line, stripped, body, commented)
        if self.noise and self.noise[2] != number:
            self._flush_noise()
        self.block.last_line = number

    def _classify(self, line: str, stripped: str, body: str, commented: bool) -> None:
        block = self.block
        if not commented:
            prompt = _PROMPT.match(stripped)
            if prompt and not _looks_like_row(stripped.split()):
                self._command(prompt.group(1))
                return

        match = _NCCL_TESTS_VERSION.search(body)
        if match and body.lower().startswith("nccl-tests"):
            self._open("version")
            self.seen.add("version")
            version, commit, headers, library = match.groups()
            block = self.block
            block.versions["nccl_tests"] = version
            if commit:
                block.versions["nccl_tests_commit"] = commit
            if headers:
                block.versions["nccl_headers"] = decode_nccl_version_code(int(headers))
            if library:
                block.versions.setdefault("nccl", decode_nccl_version_code(int(library)))
            return
        match = _RCCL_TESTS_VERSION.match(body)
        if match:
            self._open("version")
            self.seen.add("version")
            self.block.versions["rccl_tests"] = match.group(1)
            return
        match = _STARTING.match(body)
        if match:
            self._open("starting")
            self.seen.add("starting")
            self.block.started = True
            self.block.program = match.group(1)
            return
        match = _CONCLUDED.match(body)
        if match:
            if block.program and block.program != match.group(1):
                self._warn(f"line {self.line_no}: test concluded as {match.group(1)!r} but "
                           f"started as {block.program!r}")
            elif not block.program:
                block.program = match.group(1)
            block.concluded = True
            return
        if _PARAMS.match(body):
            self._open("params")
            self.seen.add("params")
            self.block.params = _parse_params(body, self.line_no)
            self.in_devices = False
            return
        if _USING_DEVICES.match(body):
            self._open("devices")
            self.seen.add("devices")
            self.in_devices = True
            return
        match = _DEVICE.match(body)
        if match:
            self._device(match)
            return
        if self.in_devices and _DEVICE_CUT.match(body):
            self._warn(f"line {self.line_no}: device line cut short: {_clip(stripped)!r}")
            return
        match = _LIB_VERSION.match(body)
        if match:
            name = match.group(1).lower()
            self.block.versions[name] = match.group(2)
            return
        match = _INFO_LINE.match(body)
        if match:
            key = "hostname" if match.group(1).lower() == "hostname" else "library_path"
            self.block.info[key] = match.group(2).strip()
            return
        if _BANNER.search(body) and not _looks_like_row(body.split()):
            self._open("banner")
            self.in_devices = False
            return
        tokens = body.split()
        if len(tokens) >= 2 and tokens[0] == "size" and tokens[1] == "count":
            self._open("header")
            self.seen.add("header")
            self.in_devices = False
            self.block.header = _parse_header(line, self.line_no)
            if self.block.header is None:
                self._warn(f"line {self.line_no}: table header not understood: "
                           f"{_clip(stripped)!r}")
            return
        if tokens and tokens[0] == "(B)":
            return
        if not commented and _looks_like_row(tokens):
            self._open("row")
            self.in_devices = False
            self._row(line)
            return
        if self._footer(body):
            return
        match = _REDUCING.match(body)
        if match:
            self.block.reduced_max_bytes = int(match.group(1))
            self.block.notes.append((self.line_no, body))
            return
        match = _CYCLE.match(body)
        if match:
            self.cycle = int(match.group(1))
            self.block.notes.append((self.line_no, body))
            return
        match = _SEPARATOR.match(body)
        if match:
            self._open("separator")
            self.block.label = match.group(1) or None
            return
        if _ELLIPSIS.fullmatch(body):
            if self.in_devices or (self.block.devices and not self._has_table()):
                self.block.devices_elided = True
                self._warn(f"line {self.line_no}: device list elided with {body!r}; world "
                           "size from the highest rank printed")
            else:
                self._warn(f"line {self.line_no}: part of the log elided ({body!r})")
            return
        if _SNIP.match(body):
            self._warn(f"line {self.line_no}: part of the log cut by whoever posted it "
                       f"({_clip(body)!r})")
            return
        self._other(stripped, body, commented)

    def _other(self, stripped: str, body: str, commented: bool) -> None:
        debug = _NCCL_DEBUG.search(stripped)
        if debug:
            version = _DEBUG_VERSION.search(stripped)
            if version:
                self.block.versions.setdefault(version.group(1).lower(), version.group(2))
            if debug.group(1) in ("WARN", "ERROR", "ABORT"):
                self.block.failures.append((self.line_no, stripped))
            self._noise("NCCL/RCCL debug output", stripped)
            return
        if commented:
            match = _ERROR_COMMENT.match(body)
            if match:
                self.block.failures.append((self.line_no, stripped))
                return
            if _KNOWN_COMMENT.match(body):
                self.block.notes.append((self.line_no, body))
                return
            if _ELISION_COMMENT.search(body):
                self.block.notes.append((self.line_no, body))
                self._warn(f"line {self.line_no}: rows or lines left out by whoever posted the "
                           f"log: {_clip(stripped)!r}")
                return
            self._warn(f"line {self.line_no}: comment not understood: {_clip(stripped)!r}")
            return
        if _FAILURE.search(stripped):
            self.block.failures.append((self.line_no, stripped))
            return
        first = stripped.split()[0].rsplit("/", 1)[-1]
        if (first in _LAUNCHERS or _PERF_BINARY.match(first)) and \
                parse_command_line(stripped).program:
            self._command(stripped)
            return
        if _LAUNCHER_NOISE.match(stripped):
            self._noise("launcher/MPI output", stripped)
            return
        self._warn(f"line {self.line_no}: not understood: {_clip(stripped)!r}")

    # -- pieces --------------------------------------------------------------------------------

    def _command(self, text: str) -> None:
        self._open("command")
        text = text.strip()
        if text.endswith("\\"):
            self.continuing = CommandLine(line=self.line_no, text=text[:-1].rstrip(), argv=[])
            return
        self.block.commands.append(parse_command_line(text, self.line_no))

    def _continue_command(self, stripped: str) -> bool:
        """Add a continuation line to the command; False when the line is not one (a comment
        or a result row: the paste was cut), which ends the command."""
        assert self.continuing is not None
        if stripped.startswith("#") or _looks_like_row(stripped.split()):
            self.block.commands.append(
                parse_command_line(self.continuing.text, self.continuing.line))
            self.continuing = None
            return False
        more = stripped.endswith("\\")
        part = stripped[:-1].rstrip() if more else stripped
        text = (self.continuing.text + " " + part).strip()
        if more:
            self.continuing.text = text
            return True
        self.block.commands.append(parse_command_line(text, self.continuing.line))
        self.continuing = None
        return True

    def _device(self, match: re.Match[str]) -> None:
        if "devices" not in self.seen:
            if self._has_table() or self.block.concluded:
                self._new_block()
            self.seen.add("devices")
        elif self._has_table():
            self._new_block()
            self.seen.add("devices")
        self.in_devices = True
        rank, group, pid, host, device, pci, name = match.groups()
        self.block.devices.append(DeviceLine(
            line=self.line_no, rank=int(rank), group=int(group) if group else None,
            pid=int(pid), host=host, device=int(device), pci=pci.strip(),
            name=name.strip() or None))

    def _footer(self, body: str) -> bool:
        footer = self.block.footer
        match = _OOB.match(body)
        if match:
            if footer.out_of_bounds is not None:
                self._warn(f"line {self.line_no}: second 'Out of bounds' line in one test")
            footer.out_of_bounds = int(match.group(1))
            footer.out_of_bounds_status = match.group(2).upper() if match.group(2) else None
            footer.out_of_bounds_line = self.line_no
            return True
        match = _AVG.match(body)
        if match:
            footer.avg_busbw_text = match.group(1)
            footer.avg_busbw_gbs = _num(match.group(1))
            footer.avg_busbw_status = match.group(2).upper() if match.group(2) else None
            footer.avg_busbw_line = self.line_no
            if footer.avg_busbw_gbs is None:
                self._warn(f"line {self.line_no}: average bus bandwidth {match.group(1)!r} is "
                           "not a number")
            return True
        match = _BITWISE.match(body)
        if match:
            footer.bitwise_mismatches = int(match.group(1))
            footer.bitwise_status = match.group(2).upper() if match.group(2) else None
            return True
        return False

    def _row(self, line: str) -> None:
        row, problems = _parse_row(line, self.line_no, self.block.header, self.block.rows)
        for problem in problems:
            self._warn(f"line {self.line_no}: {problem}: {_clip(line)!r}")
        if row is not None:
            row.cycle = self.cycle
            self.block.rows.append(row)

    def finish(self, last_line: int) -> list[ParsedTest]:
        if self.continuing is not None:
            self.block.commands.append(
                parse_command_line(self.continuing.text, self.continuing.line))
            self.continuing = None
        self._flush_noise()
        self.block.last_line = max(self.block.last_line, min(last_line, self.line_no))
        self.tests.append(self.block)
        return _merge_empty(self.tests)


def _merge_empty(tests: list[ParsedTest]) -> list[ParsedTest]:
    """Fold blocks with nothing of a test in them (noise, prompts) into a neighbour."""
    kept: list[ParsedTest] = []
    pending: ParsedTest | None = None
    for test in tests:
        if pending is not None:
            test.warnings[:0] = pending.warnings
            test.notes[:0] = pending.notes
            if not test.commands:
                test.commands = pending.commands
            test.first_line = min(test.first_line, pending.first_line)
            pending = None
        if test.has_substance:
            kept.append(test)
        else:
            pending = test
    if pending is not None:
        if kept:
            kept[-1].warnings.extend(pending.warnings)
            kept[-1].notes.extend(pending.notes)
            if not kept[-1].commands:
                kept[-1].commands = pending.commands
        elif pending.warnings or pending.commands or pending.notes:
            kept.append(pending)
    for index, test in enumerate(kept):
        test.index = index
    return kept


def _parse_params(body: str, line: int) -> TestParams:
    def grab(pattern: str) -> int | None:
        match = re.search(pattern, body, re.I)
        return int(match.group(1)) if match else None

    params = TestParams(line=line)
    params.n_thread = grab(r"nThread:?\s+(\d+)")
    params.n_gpus = grab(r"nGpus:?\s+(\d+)")
    params.min_bytes = grab(r"minBytes:?\s+(\d+)")
    params.max_bytes = grab(r"maxBytes:?\s+(\d+)")
    step = re.search(r"step:\s*(\d+)\((factor|bytes)\)", body, re.I)
    if step:
        if step.group(2).lower() == "factor":
            params.step_factor = int(step.group(1))
        else:
            params.step_bytes = int(step.group(1))
    params.warmup_iters = grab(r"warmup ?iters:\s*(\d+)")
    params.agg_iters = grab(r"agg ?iters:\s*(\d+)")
    params.iters = grab(r"(?<![A-Za-z] )(?<![A-Za-z])iters:\s*(\d+)")
    params.validation = grab(r"validation:\s*(\d+)")
    params.graph = grab(r"graph:\s*(\d+)")
    params.unalign = grab(r"unalign:\s*(\d+)")
    return params


# ---------------------------------------------------------------------------------------------
# Table header and rows
# ---------------------------------------------------------------------------------------------

_TIME_NAMES = ("time", "cputime")


def _parse_header(line: str, number: int) -> TableHeader | None:
    matches = list(re.finditer(r"\S+", line))
    names = [m.group() for m in matches]
    while names and names[0].startswith("#") and names[0] != "#wrong":
        names.pop(0)
        matches.pop(0)
    if names[:2] != ["size", "count"]:
        return None
    i = 2
    for expected in ("type", "redop"):
        if i < len(names) and names[i] == expected:
            i += 1
    has_root = i < len(names) and names[i] == "root"
    if has_root:
        i += 1
    groups: list[list[str]] = []
    time_ends: list[int] = []
    timestamp = False
    for match, name in zip(matches[i:], names[i:], strict=True):
        if name == "timestamp":
            timestamp = True
            continue
        if name in _TIME_NAMES or not groups:
            groups.append([])
            time_ends.append(match.end())
        groups[-1].append(name)
    if not groups:
        return None
    return TableHeader(line=number, has_root=has_root, groups=groups, timestamp=timestamp,
                       time_ends=time_ends)


def _looks_like_row(tokens: list[str]) -> bool:
    return (len(tokens) >= 5 and _INT.match(tokens[0]) is not None
            and _INT.match(tokens[1]) is not None
            and _NUM.match(tokens[2]) is None and _NUM.match(tokens[3]) is None
            and re.fullmatch(r"[A-Za-z][\w.]*", tokens[2]) is not None)


_DEFAULT_NEW = ["time", "algbw", "busbw", "#wrong"]
_DEFAULT_OLD = ["time", "algbw", "busbw", "error"]
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_CLOCK = re.compile(r"\d{2}:\d{2}:\d{2}\Z")


def _parse_row(line: str, number: int, header: TableHeader | None,
               previous: list[Row]) -> tuple[Row | None, list[str]]:
    matches = list(re.finditer(r"\S+", line))
    tokens = [m.group() for m in matches]
    problems: list[str] = []
    if header is not None:
        has_root = header.has_root
        groups = header.groups
    else:
        # No header in this block (grep-filtered log): the layout from the token count.
        if previous:
            has_root = previous[-1].root is not None
        else:
            has_root = (_INT.match(tokens[4]) is not None
                        and (len(tokens) - 5) % 4 == 0) or (len(tokens) - 4) % 4 != 0
        group = _DEFAULT_NEW if has_root else _DEFAULT_OLD
        groups = [group, group]
    prefix = 5 if has_root else 4
    if has_root and (len(tokens) < 5 or _INT.match(tokens[4]) is None):
        return None, ["table row not understood (no root column)"]
    size, count = int(tokens[0]), int(tokens[1])
    root = int(tokens[4]) if has_root else None
    values = matches[prefix:]
    timestamp = None
    if header is not None and header.timestamp and len(values) >= 2 and \
            _DATE.match(values[-2].group()) and _CLOCK.match(values[-1].group()):
        timestamp = values[-2].group() + " " + values[-1].group()
        values = values[:-2]
    row = Row(line=number, size_bytes=size, count=count, dtype=tokens[2], redop=tokens[3],
              root=root, out_of_place=None, in_place=None, timestamp=timestamp)
    width = len(groups[0])
    if not values:
        return None, ["table row without any measurement"]
    if len(values) >= 2 * width and len(groups) >= 2:
        parts = [(False, values[:width], groups[0]),
                 (True, values[width: width + len(groups[1])], groups[1])]
        if len(values) > width + len(groups[1]):
            extra = " ".join(m.group() for m in values[width + len(groups[1]):])
            problems.append(f"unexpected text after the row ignored ({extra!r})")
    elif len(values) >= width:
        in_place = _single_is_in_place(matches[prefix - 1], values[0], header)
        parts = [(in_place, values[:width], groups[1] if in_place and len(groups) > 1
                  else groups[0])]
        rest = values[width:]
        if rest:
            problems.append(f"row cut short: second placement incomplete "
                            f"({' '.join(m.group() for m in rest)!r}), kept the first")
    else:
        problems.append("row cut short: no complete placement, row dropped")
        return None, problems
    for in_place, fields, names in parts:
        placement, problem = _parse_placement([m.group() for m in fields], names)
        where = "in-place" if in_place else "out-of-place"
        if placement is None:
            problems.append(f"{where} part not understood ({problem})")
            continue
        if in_place:
            row.in_place = placement
        else:
            row.out_of_place = placement
    if row.in_place is None and row.out_of_place is None:
        return None, problems
    return row, problems


def _single_is_in_place(last_prefix: re.Match[str], first_value: re.Match[str],
                        header: TableHeader | None) -> bool:
    """Whether a row's only placement is the in-place one, from where it is printed."""
    if header is not None and len(header.time_ends) >= 2:
        end = first_value.end()
        out_end, in_end = header.time_ends[0], header.time_ends[1]
        return abs(end - in_end) < abs(end - out_end)
    # nccl-tests prints the blank out-of-place part as ~32 spaces.
    return first_value.start() - last_prefix.end() > 20


def _parse_placement(tokens: list[str], names: list[str]) -> tuple[Placement | None, str]:
    if len(tokens) < len(names):
        return None, "too few columns"
    values: dict[str, str] = dict(zip(names, tokens[: len(names)], strict=True))
    time_text = values.get("time", values.get("cputime", ""))
    algbw_text = values.get("algbw", "")
    busbw_text = values.get("busbw", "")
    time_us, algbw, busbw = _num(time_text), _num(algbw_text), _num(busbw_text)
    if time_us is None or algbw is None or busbw is None:
        return None, f"time/algbw/busbw {time_text!r} {algbw_text!r} {busbw_text!r}"
    wrong: int | None = None
    error: float | None = None
    over = False
    check_text: str | None = None
    if "#wrong" in values or "error" in values:
        name = "#wrong" if "#wrong" in values else "error"
        check_text = values[name]
        text = check_text
        if text.endswith("*"):
            over, text = True, text.rstrip("*")
        if text.upper() != "N/A":
            number = _num(text)
            if number is None or number < 0:
                return None, f"{name} {check_text!r}"
            if name == "#wrong":
                wrong = int(round(number))
            else:
                error = number
    more = {name: value for name, value in values.items()
            if name not in ("time", "cputime", "algbw", "busbw", "#wrong", "error")}
    return Placement(time_us=time_us, algbw_gbs=algbw, busbw_gbs=busbw, wrong=wrong,
                     error=error, time_text=time_text, algbw_text=algbw_text,
                     busbw_text=busbw_text, check_text=check_text, over_threshold=over,
                     more=more), ""


# ---------------------------------------------------------------------------------------------
# What a block measured
# ---------------------------------------------------------------------------------------------


def _chunk_factor(rows: list[Row]) -> int | None:
    """n when every row has size = count x element size x n (1 for unchunked), else None."""
    factors: set[int] = set()
    for row in rows:
        size = element_size(row.dtype)
        if size is None or row.count <= 0:
            continue
        if row.size_bytes % (row.count * size):
            return None
        factors.add(row.size_bytes // (row.count * size))
    return factors.pop() if len(factors) == 1 else None


def _best_placement(rows: list[Row]) -> Placement | None:
    best: Placement | None = None
    for row in rows:
        for _, placement in row.placements():
            if placement.algbw_gbs > 0 and (best is None or placement.algbw_gbs > best.algbw_gbs):
                best = placement
    return best


def guess_collective(rows: list[Row]) -> tuple[str | None, str]:
    """The collective a table's columns imply (see the module docstring), and why."""
    if not rows:
        return None, "no rows"
    redops = {row.redop.lower() for row in rows}
    reducing = bool(redops) and redops <= REDUCTION_OPS
    no_op = redops == {"none"}
    roots = {row.root for row in rows if row.root is not None}
    rooted = bool(roots) and all(root >= 0 for root in roots)
    chunk = _chunk_factor(rows)
    best = _best_placement(rows)
    ratio = best.busbw_gbs / best.algbw_gbs if best else None
    in_place_unchecked = (
        any(row.out_of_place and row.out_of_place.checked for row in rows)
        and all(row.in_place is not None and not row.in_place.checked for row in rows))
    if chunk is not None and chunk > 1:
        if reducing:
            return "reduce_scatter", f"chunked counts (size = count x type x {chunk}), redop " \
                                     f"{'/'.join(sorted(redops))}"
        if no_op:
            if in_place_unchecked:
                return "alltoall", f"chunked counts (x{chunk}), redop none, in-place not verified"
            return "all_gather", f"chunked counts (x{chunk}), redop none, in-place verified " \
                                 "(alltoall would print N/A)"
        return None, f"chunked counts but redop {sorted(redops)}"
    if chunk == 1:
        if rooted:
            if reducing:
                return "reduce", f"root {sorted(roots)} and a reduction"
            if no_op:
                return "broadcast", f"root {sorted(roots)} and redop none"
        elif reducing:
            if ratio is None:
                return "all_reduce", "unchunked, a reduction, root -1 (no bandwidth to check)"
            if ratio > 1.1:
                return "all_reduce", f"unchunked, a reduction, busbw/algbw {ratio:.3f} > 1"
            if in_place_unchecked:
                return "sendrecv", f"unchunked, busbw/algbw {ratio:.3f}, in-place not verified"
            return "all_reduce", f"unchunked, busbw/algbw {ratio:.3f} (2 ranks: factor 1)"
        return None, f"unchunked counts, redop {sorted(redops)}, roots {sorted(roots)}"
    return None, "element size unknown or counts inconsistent"


def world_size_from_ratio(rows: list[Row], collective: str) -> int | None:
    """The one world size whose bus factor reproduces every printed busbw from its algbw."""
    if collective not in COLLECTIVES or bus_factor(collective, 4) == 1.0:
        return None
    best = _best_placement(rows)
    if best is None or best.algbw_gbs < 0.5:
        return None
    ratio = best.busbw_gbs / best.algbw_gbs
    limit = 2.0 if collective == "all_reduce" else 1.0
    if ratio >= limit or ratio <= 0:
        return None
    estimate = round(limit / (limit - ratio))
    fits = [n for n in range(max(1, estimate - 3), estimate + 4)
            if _busbw_fits(rows, collective, n)]
    return fits[0] if len(fits) == 1 else None


def _busbw_fits(rows: list[Row], collective: str, world_size: int) -> bool:
    factor = bus_factor(collective, world_size)
    for row in rows:
        for _, p in row.placements():
            slack = (printed_unit(p.algbw_text) * factor + printed_unit(p.busbw_text)) / 2
            if abs(p.algbw_gbs * factor - p.busbw_gbs) > slack + 1e-9:
                return False
    return True


def _decide(test: ParsedTest) -> None:
    """Fill collective, world size and consistency warnings of a finished block."""
    command = test.command
    if not test.program and command and command.program:
        test.program = command.program
    guessed, reason = guess_collective(test.rows)
    if test.program:
        test.collective = _collective_of_program(test.program)
        test.collective_source = f"program name {test.program}"
        if test.collective is None:
            test.warnings.append(f"test {test.program}: not a collective collscope knows; "
                                 "busbw cannot be checked")
    else:
        word = None
        for cmd in test.commands:
            word = _collective_word(cmd.text)
            if word:
                break
        if word:
            test.collective = word[0]
            test.collective_source = f"word {word[1]!r} of the command line (guess)"
            test.warnings.append(f"line {test.first_line}: no program name; collective "
                                 f"{word[0]} guessed from the word {word[1]!r} of the command "
                                 "line")
        elif guessed and test.rows:
            test.collective = guessed
            test.collective_source = f"columns (guess: {reason})"
            test.warnings.append(f"line {test.rows[0].line}: no program name; collective "
                                 f"{guessed} guessed from the columns: {reason}")
        elif test.rows:
            test.warnings.append(f"line {test.rows[0].line}: no program name and the columns "
                                 f"do not tell the collective ({reason})")
    if (test.collective in COLLECTIVES and guessed and test.rows
            and COLLECTIVES[guessed].chunked != COLLECTIVES[test.collective].chunked):
        test.warnings.append(f"line {test.rows[0].line}: the columns look like {guessed} "
                             f"({reason}) but the log says {test.collective}")
    _decide_world_size(test)
    _check_footer(test)
    ranks = [device.rank for device in test.devices]
    if len(set(ranks)) < len(ranks):
        duplicated = sorted({r for r in ranks if ranks.count(r) > 1})
        test.warnings.append(f"line {test.devices[0].line}: ranks {duplicated} printed more "
                             "than once (nccl-tests built without MPI, run by a launcher? each "
                             "process then runs its own test)")


def _decide_world_size(test: ParsedTest) -> None:
    table_n: int | None = None
    table_method = ""
    if test.collective in COLLECTIVES and test.rows:
        spec = COLLECTIVES[test.collective]
        chunk = _chunk_factor(test.rows)
        if spec.chunked and chunk is not None and chunk >= 1:
            table_n, table_method = chunk, f"size / (count x element size) of {test.collective}"
        else:
            table_n = world_size_from_ratio(test.rows, test.collective)
            table_method = f"busbw/algbw = bus factor of {test.collective}"
    test.table_world_size = table_n
    ranks = {device.rank for device in test.devices}
    command = test.command
    if ranks and not test.devices_elided:
        test.world_size = len(ranks)
        test.world_size_method = f"{len(ranks)} ranks listed in the device block"
    elif ranks:
        test.world_size = max(ranks) + 1
        test.world_size_method = "highest rank in the elided device block + 1"
    elif command and command.launcher_ranks:
        threads = (test.params.n_thread if test.params and test.params.n_thread else
                   _int(command.test_args.get("-t", "1")) or 1)
        gpus = (test.params.n_gpus if test.params and test.params.n_gpus else
                _int(command.test_args.get("-g", "1")) or 1)
        test.world_size = command.launcher_ranks * threads * gpus
        test.world_size_method = (f"{command.launcher} ranks {command.launcher_ranks} x nThread "
                                  f"{threads} x nGpus {gpus} (command line)")
    elif table_n:
        test.world_size = table_n
        test.world_size_method = table_method + " (no device block)"
    if test.world_size and table_n and table_n != test.world_size and test.rows:
        test.warnings.append(
            f"line {test.rows[0].line}: the table implies {table_n} ranks ({table_method}) but "
            f"the world size is {test.world_size} ({test.world_size_method})")


def _check_footer(test: ParsedTest) -> None:
    footer = test.footer
    failing = [row for row in test.rows for _, p in row.placements() if failed(p, row.dtype,
                                                                             test.world_size)]
    if footer.out_of_bounds and not failing and test.rows:
        test.warnings.append(
            f"line {footer.out_of_bounds_line}: the footer counts {footer.out_of_bounds} "
            "out-of-bounds values but no printed row shows an error over the limit (rows left "
            "out of the log?)")
    if footer.out_of_bounds == 0 and failing:
        test.warnings.append(
            f"line {footer.out_of_bounds_line}: the footer says 0 out-of-bounds values but "
            f"rows at lines {sorted({row.line for row in failing})} show errors")


def failed(placement: Placement, dtype: str, world_size: int | None) -> bool:
    """Whether nccl-tests counts this placement as out of bounds."""
    if placement.over_threshold or (placement.wrong or 0) > 0:
        return True
    if placement.error is not None:
        limit = error_tolerance(dtype, world_size)
        return limit is not None and placement.error > limit
    return False


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def _line_of(message: str) -> int:
    match = re.match(r"lines? (\d+)", message)
    return int(match.group(1)) if match else 0


def parse_nccl_tests(text: str) -> Parsed[list[ParsedTest]]:
    """All test blocks of an nccl-tests / rccl-tests log, with every warning (line-numbered)."""
    reader = _Reader()
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        try:
            reader.feed(number, line)
        except Exception as exc:  # the parser must never raise on odd input
            reader.continuing = None
            reader.block.warnings.append(f"line {number}: could not be read ({exc!r}): "
                                         f"{_clip(line)!r}")
    tests = reader.finish(len(lines))
    warnings: list[str] = []
    for test in tests:
        try:
            _decide(test)
        except Exception as exc:
            test.warnings.append(f"test at line {test.first_line}: analysis failed ({exc!r})")
        test.warnings.sort(key=_line_of)
        warnings.extend(test.warnings)
    return Parsed(value=tests, warnings=warnings)
