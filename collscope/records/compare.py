"""The records of `collscope compare --json`: one ``compare`` record (the inputs, the settings
and the counts, the exit code's reason), then one ``compare_row`` per matched size."""

from __future__ import annotations

from typing import ClassVar, Literal

from collscope.records.base import Record
from collscope.records.run import SCHEMA_VERSION

CompareVerdict = Literal["ok", "regressed", "improved", "n/a"]    # n/a: no usable number
# The verdict with "ok" split: "within" the threshold, or "not significant" (beyond it, but
# its test cannot tell the change from noise).
CompareCategory = Literal["regressed", "improved", "within", "not significant", "n/a"]


class CompareRecord(Record, tag="compare"):
    """BASE and NEW as given on the command line, the settings, and the rows per verdict."""

    collscope_version: str
    argv: list[str]
    base: str
    new: str
    threshold_pct: float
    metric: str                   # as asked: auto, time or busbw (each row says which it used)
    matched: int
    regressed: int
    improved: int
    within_threshold: int
    not_significant: int
    sizes: int                    # distinct message sizes among the rows
    unmatched_base: int
    unmatched_new: int            # results of NEW not judged (BASE has none like them)
    schema_version: int = SCHEMA_VERSION

    kind_before: ClassVar[str | None] = "schema_version"


class CompareRowRecord(Record, tag="compare_row"):
    """One matched size: both sides' numbers, the changes, the verdict and its test."""

    collective: str
    dtype: str
    op: str
    in_place: bool
    algo: str
    size_bytes: int
    world_size_base: int
    world_size_new: int
    base_time_us: float
    new_time_us: float
    time_delta_pct: float | None       # + = NEW slower
    base_busbw_gbs: float
    new_busbw_gbs: float
    busbw_delta_pct: float | None      # - = NEW slower
    metric: str                        # the metric the verdict used: time or busbw
    verdict: CompareVerdict
    category: CompareCategory
    change_pct: float | None           # the slowdown its test held against the threshold
    test: str                          # threshold, ci-overlap or mann-whitney
    p50_delta_pct: float | None        # ci-overlap: the p50 slowdown it judged
    p_value: float | None              # mann-whitney: the one-sided test's p
    runs_base: int
    runs_new: int
    base_ci_halfwidth: float | None
    new_ci_halfwidth: float | None
