"""``collscope report --json FILE``'s records: what the page concludes, for scripts: one
``report_headline`` per section headline (the verdicts at the top of the page), then one
``report_input`` per input file (what it held, the warnings of reading it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class ReportHeadlineRecord:
    section: str                      # hang, watch, links, trace, collectives, model, ...
    level: str                        # fail, warn, pass or info
    text: str                         # one sentence, as the page's headline says it
    details: list[str] = field(default_factory=list)   # what decided it, one line each
    kind: str = "report_headline"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ReportInputRecord:
    name: str                         # as the page names it
    path: str                         # as given on the command line
    format: str                       # "jsonl" (collscope records) or "nccl-tests" (a log)
    counts: dict[str, int]            # records per kind: runs, results, train, samples, ...
    warnings: list[str] = field(default_factory=list)
    kind: str = "report_input"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
