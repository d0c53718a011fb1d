"""``collscope report --json FILE``'s records: what the page concludes, for scripts: one
``report_headline`` per section headline (the verdicts at the top of the page), then one
``report_input`` per input file (what it held, the warnings of reading it). Report writes
them and reads them not (they sum up other records)."""

from __future__ import annotations

from collscope.records.base import Record


class ReportHeadlineRecord(Record, tag="report_headline"):
    section: str                      # hang, watch, links, trace, collectives, model, ...
    level: str                        # fail, warn, pass or info
    text: str                         # one sentence, as the page's headline says it
    details: list[str] = []           # what decided it, one line each


class ReportInputRecord(Record, tag="report_input"):
    name: str                         # as the page names it
    path: str                         # as given on the command line
    format: str                       # "jsonl" (collscope records) or "nccl-tests" (a log)
    counts: dict[str, int]            # records per kind: runs, results, train, samples, ...
    warnings: list[str] = []
