"""The configs of the commands that read records: `collscope report`, `compare` and `import`
(one dataclass each; every field is also its flag). Pure: no torch, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass

from collscope.config_flags import (
    REQUIRED,
    check_choice,
    flag,
    json_flag,
    output_flag,
    stdout_once,
)
from collscope.errors import UsageError
from collscope.units import parse_size


@dataclass
class ReportConfig:
    """What `collscope report` reads and writes (each field is also its flag)."""

    inputs: list[str] = flag(REQUIRED, "inputs", nargs="+", metavar="INPUT",
                             help="collscope JSON Lines files or nccl-tests / rccl-tests logs")
    output: str = output_flag("report.html", "HTML file to write")
    png: str | None = flag(None, "--png", metavar="DIR",
                           help="also write every chart as a PNG into DIR (needs matplotlib: "
                                "pip install 'collscope[report]')")
    title: str = flag("collscope report", "--title", show_default=False, help="page title")
    json: str | None = json_flag("also write JSON Lines: a report_headline per verdict at the "
                                 "top of the page, a report_input per input; '-' for stdout")

    def __post_init__(self) -> None:
        stdout_once(self, "output", "json")


@dataclass
class ImportConfig:
    """What `collscope import` reads and writes (each field is also its flag)."""

    logs: list[str] = flag(REQUIRED, "logs", nargs="+", metavar="LOG",
                           help="nccl-tests / rccl-tests output files")
    output: str = output_flag("OUT.jsonl", "JSON Lines file to write ('-' for stdout)")
    skip_failed: bool = flag(False, "--skip-failed",
                             help="import the other logs when one has no result table (it is "
                                  "reported)")
    json: str | None = json_flag("write one import_log record per log (runs, results, "
                                 "warnings) as JSON Lines; '-' for stdout")
    quiet: bool = flag(False, "-q", "--quiet", help="print no warnings")

    def __post_init__(self) -> None:
        stdout_once(self, "output", "json")


METRICS = ("auto", "time", "busbw")


def parse_threshold(text: str, label: str = "--threshold") -> float:
    """'5', '2.5' or '5%' -> 5.0 (a percentage >= 0); UsageError naming ``label`` otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%?\s*", text)
    if not match:
        raise UsageError(f"{label}: '{text}' is not a percentage; use a number >= 0, "
                         "e.g. 5 or 2.5")
    return float(match.group(1))


@dataclass
class CompareConfig:
    """How `collscope compare` judges NEW against BASE (each field is also its flag)."""

    base: str = flag(REQUIRED, "base", metavar="BASE",
                     help="baseline: collscope JSON Lines or a log")
    new: str = flag(REQUIRED, "new", metavar="NEW", help="candidate: collscope JSON Lines or a log")
    threshold_pct: float = flag(5.0, "--threshold", metavar="PCT", parse=parse_threshold,
                                shown="5", help="percent slower that counts as a regression")
    metric: str = flag("auto", "--metric", show_default=False,
                       help="auto (time on equal rank counts, else busbw), time or busbw")
    min_bytes: int = flag(0, "--min-bytes", metavar="SIZE", parse=parse_size,
                          show_default=False, help="ignore sizes below SIZE (latency-bound "
                                                   "sizes are noisy), e.g. 64K")
    json: str | None = json_flag("write the comparison as JSON Lines: a compare record, then "
                                 "one compare_row per size ('-': to stdout instead of the "
                                 "table)")

    def __post_init__(self) -> None:
        check_choice(self, "metric", METRICS)
