"""``collscope monitor``'s settings as one typed dataclass, validated on creation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from collscope.config_flags import (
    check_choice,
    command_flag,
    flag,
    invalid,
    prometheus_flag,
    without_separator,
)
from collscope.errors import UsageError
from collscope.hw import BACKEND_NAMES

MIN_INTERVAL_S = 0.01
GPU_BACKEND_CHOICES = ("auto", *BACKEND_NAMES)


@dataclass
class MonitorConfig:
    interval_s: float = flag(1.0, "--interval", type=float, metavar="S",
                             help="seconds between samples")
    duration_s: float | None = flag(None, "--duration", type=float, metavar="S",
                                    help="stop sampling after S seconds (a wrapped command "
                                         "keeps running)")
    json: str | None = flag(None, "--json", metavar="FILE", deprecated=("--jsonl",),
                             help="write JSON Lines: a run record, then a sample record per "
                                  "interval (each flushed as written); - for stdout")
    prometheus: str | None = prometheus_flag("the latest sample")
    summary_json: str | None = flag(None, "--summary-json", metavar="FILE",
                                    help="write the summary (mean, peak, min, last per metric, "
                                         "bytes moved) as JSON; - for stdout")
    gpu_backend: str = flag("auto", "--gpu-backend", metavar="NAME", show_default=False,
                            help="auto (amd, then nvidia, else none), amd, nvidia or none")
    command: list[str] = command_flag(
        "-- CMD ARGS", "run this command (no shell), sample while it runs, exit with its code")
    listen: tuple[str, int] | None = field(default=None, init=False)
    """(host, port) parsed from ``prometheus``."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.interval_s) and self.interval_s >= MIN_INTERVAL_S):
            raise invalid(self, "interval_s", f"{self.interval_s:g} is not a sampling interval; "
                                             f"use seconds >= {MIN_INTERVAL_S:g}, e.g. 1 or 0.1")
        if self.duration_s is not None and not (math.isfinite(self.duration_s)
                                                and self.duration_s > 0):
            raise invalid(self, "duration_s", f"{self.duration_s:g} is not a duration; use "
                                             "seconds > 0, e.g. 60")
        check_choice(self, "gpu_backend", GPU_BACKEND_CHOICES)
        if self.prometheus is not None:
            from collscope.monitor.prometheus import parse_listen

            self.listen = parse_listen(self.prometheus)
        if self.command == ["--"]:
            raise UsageError("COMMAND: nothing to run after '--'")
        self.command = without_separator(self.command)
        self._check_stdout()

    def _check_stdout(self) -> None:
        """'-' is stdout for one output, which then carries only that JSON (the view and the
        text summary move to stderr); a wrapped command's stdout is its own."""
        to_stdout = [name for name in ("json", "summary_json") if getattr(self, name) == "-"]
        if to_stdout and self.command:
            raise invalid(self, to_stdout[0], "'-' (stdout) cannot be used with a command, "
                                              "whose output stdout carries; give a FILE")
        if len(to_stdout) > 1:
            raise invalid(self, "summary_json", "'-' (stdout) is taken by --json; give a FILE")

    @property
    def json_to_stdout(self) -> bool:
        """True when --json or --summary-json is '-': stdout carries that JSON only."""
        return "-" in (self.json, self.summary_json)
