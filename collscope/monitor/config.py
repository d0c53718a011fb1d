"""``collscope monitor``'s settings as one typed dataclass, validated on creation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from collscope.errors import UsageError
from collscope.hw import BACKEND_NAMES

MIN_INTERVAL_S = 0.01
GPU_BACKEND_CHOICES = ("auto", *BACKEND_NAMES)


@dataclass
class MonitorConfig:
    interval_s: float = 1.0
    """Seconds between samples."""
    duration_s: float | None = None
    """Stop sampling after this many seconds (never kills a wrapped command)."""
    jsonl: str | None = None
    """JSON Lines file: a run record, then one sample record per interval."""
    prometheus: str | None = None
    """[HOST:]PORT to serve /metrics on; binds 127.0.0.1 unless a host is given."""
    summary_json: str | None = None
    """Write the run summary (mean and peak per metric, bytes moved) here as JSON."""
    gpu_backend: str = "auto"
    """GPU source: auto (amd, then nvidia, else none), amd, nvidia or none."""
    command: list[str] = field(default_factory=list)
    """Command to run and sample while it runs (an argument list, no shell)."""
    listen: tuple[str, int] | None = field(default=None, init=False)
    """(host, port) parsed from ``prometheus``."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.interval_s) and self.interval_s >= MIN_INTERVAL_S):
            raise UsageError(f"--interval: {self.interval_s:g} is not a sampling interval; use "
                             f"seconds >= {MIN_INTERVAL_S:g}, e.g. 1 or 0.1")
        if self.duration_s is not None and not (math.isfinite(self.duration_s)
                                                and self.duration_s > 0):
            raise UsageError(f"--duration: {self.duration_s:g} is not a duration; use seconds "
                             "> 0, e.g. 60")
        if self.gpu_backend not in GPU_BACKEND_CHOICES:
            raise UsageError(f"--gpu-backend: {self.gpu_backend!r} is not one of "
                             f"{', '.join(GPU_BACKEND_CHOICES)}")
        if self.prometheus is not None:
            from collscope.monitor.prometheus import parse_listen

            self.listen = parse_listen(self.prometheus)
        if self.command and self.command[0] == "--":
            self.command = self.command[1:]
            if not self.command:
                raise UsageError("COMMAND: nothing to run after '--'")
