"""``collscope watch``'s settings as one typed dataclass, validated on creation.

The wrapper hands the settings the agents need (interval, stall threshold, dump folder) to the
ranks as JSON in one environment variable (``AgentSettings``), so a rank never parses flags.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Literal

from collscope.config_flags import (
    check_choice,
    command_flag,
    flag,
    invalid,
    json_flag,
    prometheus_flag,
    without_separator,
)
from collscope.errors import UsageError

OnHang = Literal["report", "kill"]
ON_HANG_CHOICES: tuple[OnHang, ...] = ("report", "kill")
Aggregate = Literal["hosts", "flat"]
AGGREGATE_CHOICES: tuple[Aggregate, ...] = ("hosts", "flat")
MIN_INTERVAL_S = 0.1
# Below gloo's (30 min) and NCCL's (10 min) default collective timeouts, so a stall becomes a
# post-mortem while every rank is still alive to dump.
DEFAULT_HANG_AFTER_S = 180.0
SETTINGS_ENV = "COLLSCOPE_WATCH_SETTINGS"
CHANNEL_ENV = "COLLSCOPE_WATCH_CHANNEL"


@dataclass
class WatchConfig:
    json: str | None = json_flag("write JSON Lines: a run record, per-rank window records, "
                                 "findings, a hang_verdict on a stall (flushed as written)")
    prometheus: str | None = prometheus_flag("per-rank collscope_watch_* series")
    interval_s: float = flag(1.0, "--interval", type=float, metavar="S",
                             help="seconds between Flight Recorder reads and store exchanges")
    hang_after_s: float = flag(DEFAULT_HANG_AFTER_S, "--hang-after", type=float, metavar="S",
                               help="a collective pending this long on any rank is a stall: "
                                    "every rank dumps, then collscope hang's verdict")
    on_hang: OnHang = flag("report", "--on-hang", choices=ON_HANG_CHOICES,
                           help="after the verdict: report (the job goes on) or kill (end the "
                                "job, exit 124, so the scheduler can requeue it)")
    dump_dir: str = flag("collscope-watch-dumps", "--dump-dir", metavar="DIR",
                         help="where each rank writes fr_trace_rank_<R> and stack_rank_<R>.json "
                              "on a stall")
    aggregate: Aggregate = flag("hosts", "--aggregate", choices=AGGREGATE_CHOICES,
                                help="hosts: each host's first rank merges its host's summaries "
                                     "and rank 0 reads one record per host (rank 0's work and "
                                     "the store's traffic grow with hosts); flat: rank 0 reads "
                                     "every rank's")
    command: list[str] = command_flag("-- COMMAND ARGS",
                                      "the launch command (no shell), e.g. torchrun ... train.py")
    listen: tuple[str, int] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.interval_s) and self.interval_s >= MIN_INTERVAL_S):
            raise invalid(self, "interval_s", f"{self.interval_s:g} is not an interval; use "
                                             f"seconds >= {MIN_INTERVAL_S:g}, e.g. 1")
        if not (math.isfinite(self.hang_after_s) and self.hang_after_s >= 2 * self.interval_s):
            raise invalid(self, "hang_after_s", f"{self.hang_after_s:g} is not a stall "
                          f"threshold; use seconds >= 2 x --interval, e.g. 180")
        check_choice(self, "on_hang", ON_HANG_CHOICES)
        check_choice(self, "aggregate", AGGREGATE_CHOICES)
        if self.json == "-":
            raise invalid(self, "json", "'-' (stdout) cannot be used: stdout is the job's own; "
                                        "give a FILE")
        if self.prometheus is not None:
            from collscope.monitor.prometheus import parse_listen

            self.listen = parse_listen(self.prometheus)
        self.command = without_separator(self.command)
        if not self.command:
            raise UsageError("COMMAND: nothing to run; give the launch command after '--', "
                             "e.g. collscope watch -- torchrun --nproc-per-node 8 train.py")

    def agent_settings(self) -> AgentSettings:
        return AgentSettings(self.interval_s, self.hang_after_s,
                             os.path.abspath(self.dump_dir), self.aggregate)


@dataclass(frozen=True)
class AgentSettings:
    """What every rank's agent needs; travels as JSON in SETTINGS_ENV."""

    interval_s: float = 1.0
    hang_after_s: float = DEFAULT_HANG_AFTER_S
    dump_dir: str = "collscope-watch-dumps"
    aggregate: str = "hosts"

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, environ: dict[str, str] | os._Environ[str]) -> AgentSettings:
        """The wrapper's settings, or the defaults for an explicit start() outside watch."""
        text = environ.get(SETTINGS_ENV)
        return cls(**json.loads(text)) if text else cls()
