"""The typed records of an nccl-tests log, and the small number helpers they need:
element sizes of the type column, the old error column's tolerance, printed precision."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

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
    has_redop: bool = True              # 2018-2019 data-movement tables print no redop
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
    nodes: int | None = None                # as declared by a structured output (rccl-tests -Z)
    ranks_per_node: int | None = None

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

INT = re.compile(r"[-+]?\d+\Z")
NUM = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\Z")


def parse_int(token: str) -> int | None:
    return int(token) if INT.match(token) else None


def parse_num(token: str) -> float | None:
    if not NUM.match(token):
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


def clip(text: str, limit: int = 160) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."
