"""What `collscope trace` analyses: one typed dataclass, validated on construction (pure, no
trace reading, so the CLI builds its parser from it without importing the reader)."""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.config_flags import ConfigError, check_choice, flag, invalid, json_flag, list_flag
from collscope.trace.clock import MODES as CLOCK_MODES

StepSelection = tuple[int | None, int | None] | None
# Fits a laptop beside the user's other work; 8 ranks of ~300 MB each read within it
# (benchmarks/trace_scale.py, docs/trace.md).
DEFAULT_MEMORY_MIB = 1024


def parse_steps(text: str, label: str = "--steps") -> StepSelection:
    """"A:B", "A:" or ":B" (ProfilerStep numbers, B excluded)."""
    low, sep, high = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return (int(low) if low.strip() else None, int(high) if high.strip() else None)
    except ValueError:
        raise ConfigError("steps", f"'{text}' is not A:B; use ProfilerStep numbers such as "
                                   "3:8, 3: or :8", label) from None


@dataclass
class TraceConfig:
    """What `collscope trace` analyses."""

    # nargs="*": --baseline takes files up to the next flag and may take TRACE with them
    # (`--baseline bl.jsonl traces/`); the CLI gives those back (traces_after_baseline), then
    # __post_init__ requires one.
# One flag a field, the declarations' one shape deliberate (twin: watch/config.py).
    paths: list[str] = flag([], "paths", nargs="*", metavar="TRACE",
                            help="trace files or folders (at least one)")
    baseline: list[str] = list_flag(
        "--baseline", nargs="+", action="extend", metavar="FILE",
        show_default=False, help="collscope bench --json output and/or nccl-tests / "
                                 "rccl-tests logs: one or more per --baseline, which may be "
                                 "repeated; folders and .json / .json.gz files at the end of "
                                 "its list are TRACE when no TRACE is given elsewhere")
    steps: StepSelection = flag(None, "--steps", metavar="A:B", parse=parse_steps,
                                help="ProfilerSteps A to B-1 (default: all but the last, as "
                                     "HolisticTraceAnalysis)")
    clock_align: str = flag("auto", "--clock-align", choices=CLOCK_MODES,
                            help="put the ranks' clocks on the lowest rank's before judging "
                                 "lateness, offsets estimated from the ends of synchronising "
                                 "collectives: auto (when the traces come from several hosts, "
                                 "or name none and the offsets clearly exceed their spread), "
                                 "on, off")
    memory_mib: int = flag(DEFAULT_MEMORY_MIB, "--memory-mib", type=int, metavar="MIB",
                           help="memory for reading the ranks' traces, in MiB: worker processes "
                                "read ranks in parallel, as many as fit (each ~150 MiB + 0.35 x "
                                "the largest trace's JSON size, streamed), at most one per "
                                "core; below one worker's share, ranks are read one after "
                                "another in one process")
    json: str | None = json_flag("write JSON Lines: a run record, then trace_collective, "
                                 "trace_step, trace_rank and finding records ('-': to stdout "
                                 "instead of tables)")
    workers: int | None = field(default=None)   # processes reading ranks; None: from memory_mib

    def __post_init__(self) -> None:
        if not self.paths:
            raise ConfigError("paths", "give at least one trace file or folder", "TRACE")
        if isinstance(self.memory_mib, bool) or not isinstance(self.memory_mib, int) or \
                self.memory_mib <= 0:
            raise invalid(self, "memory_mib", f"'{self.memory_mib}' is not a positive whole "
                                              "number of MiB, e.g. 1024")
        check_choice(self, "clock_align", CLOCK_MODES)
        if self.steps is not None:
            low, high = self.steps
            if low is not None and high is not None and high <= low:
                raise invalid(self, "steps", f"{low}:{high} selects no step; use A:B with "
                                             "B > A (ProfilerStep numbers, B excluded), A: or :B")
