"""Compare two sets of results size by size: the regression gate behind `collscope compare`.

Pure: results in, a ``Comparison`` out. Results are matched by collective, dtype, op,
placement, size and algorithm. When each side holds exactly one result for such a key they are
matched whatever their world sizes (busbw is then the fair measure, see ``metric``); when a side
holds several (one log with 1-, 2-, 4- and 8-node runs, a JSONL with repeated runs), results of
equal world size are paired in the order they appear; when one side ran a key and world size
more often than the other (a log with a second run appended), each extra run is paired with the
other side's last result of that key and world size, so every run is judged and a regression
in any run of NEW fails the gate. What has no result of equal world size on the other side is
reported as unmatched, never guessed.

A row regresses when the new result is slower than the base by more than the threshold:
time up by more than ``threshold_pct`` percent (metric "time"), or busbw down by more than
``threshold_pct`` percent of the base (metric "busbw"). Metric "auto" uses time when both
results ran on the same number of ranks (it is what was measured; busbw is derived from it) and
busbw otherwise (busbw is normalised for the rank count, time is not).

Which test decides a row (``Row.test``, printed and in the JSON):

- ``ci-overlap`` when both results carry the spread collscope bench records (``time_us_p50``
  and ``ci_halfwidth``, the relative half-width of the 95% confidence interval of the median):
  a row regresses only when its p50 is slower by more than the threshold AND the two 95% CIs
  do not overlap, so the noise of small sizes does not fail a CI gate; improved alike.
  Under metric busbw the p50 times are divided by the bus factor of each side's rank count.
- ``mann-whitney`` when each side holds at least MIN_RUNS results of the same key and world
  size (repeated runs): they form one row, judged on the medians of their times, and it
  regresses only when the median is slower by more than the threshold AND a one-sided
  Mann-Whitney U test (scipy) finds new slower than base at p <= ALPHA; improved alike.
- ``threshold`` otherwise (nccl-tests logs carry one mean time and no spread): the mean time
  (or busbw) beyond the threshold.

``Row.category`` splits verdict "ok" in two: "within" (the change its test held against the
threshold, ``change_pct``, is within it) and "not significant" (beyond it, but the CIs overlap
or p > ALPHA): a large change the test cannot tell from noise is not "within the threshold".
Rows come sorted by collective, placement and size (``sort_rows``), whichever test decided them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from collscope.collectives.table import bus_factor
from collscope.records.bench import BenchResult
from collscope.records.compare import (
    CompareCategory,
    CompareRecord,
    CompareRowRecord,
    CompareVerdict,
)
from collscope.report.config import METRICS
from collscope.stats.significance import rank_sum_p

TESTS = {"mann-whitney": "median of repeated runs beyond the threshold and one-sided "
                        "Mann-Whitney U p <= 0.05",
         "ci-overlap": "p50 beyond the threshold and non-overlapping 95% CIs of the medians",
         "threshold": "mean time (or busbw) beyond the threshold; no recorded spread"}
MIN_RUNS = 3      # 3 against 3 completely separated runs give the smallest p: 1/20 = 0.05
ALPHA = 0.05
Key = tuple[str, str, str, bool, int, str]


def match_key(result: BenchResult) -> Key:
    return (result.collective, result.dtype, result.op, result.in_place, result.size_bytes,
            result.algo)


@dataclass
class Row:
    """One matched size: both results, their deltas and the verdict."""

    base: BenchResult
    new: BenchResult
    time_delta_pct: float | None     # + = new slower
    busbw_delta_pct: float | None    # - = new slower
    metric: str                      # the metric the verdict used: "time" or "busbw"
    verdict: CompareVerdict
    test: str = "threshold"          # what decided it: a key of TESTS
    p50_delta_pct: float | None = None  # ci-overlap: the p50 slowdown it judged (+ = slower)
    p_value: float | None = None     # mann-whitney: the one-sided test's p
    runs: tuple[int, int] = (1, 1)   # results behind the row: (base, new)
    change_pct: float | None = None  # the slowdown the test held against the threshold (+ =
    #                                  slower): p50 for ci-overlap, else time (or -busbw)
    threshold_pct: float = 5.0

    @property
    def category(self) -> CompareCategory:
        """The verdict, with "ok" split in two: "within" the threshold, or "not significant"
        (changed beyond it, but the CIs overlap or the rank test's p > ALPHA)."""
        if self.verdict != "ok":
            return self.verdict
        beyond = self.change_pct is not None and abs(self.change_pct) > self.threshold_pct
        return "not significant" if beyond else "within"

    def record(self) -> CompareRowRecord:
        b, n = self.base, self.new
        return CompareRowRecord(
            collective=b.collective, dtype=b.dtype, op=b.op, in_place=b.in_place, algo=b.algo,
            size_bytes=b.size_bytes, world_size_base=b.world_size, world_size_new=n.world_size,
            base_time_us=b.time_us, new_time_us=n.time_us, time_delta_pct=self.time_delta_pct,
            base_busbw_gbs=b.busbw_gbs, new_busbw_gbs=n.busbw_gbs,
            busbw_delta_pct=self.busbw_delta_pct, metric=self.metric, verdict=self.verdict,
            category=self.category, change_pct=self.change_pct, test=self.test,
            p50_delta_pct=self.p50_delta_pct, p_value=self.p_value, runs_base=self.runs[0],
            runs_new=self.runs[1], base_ci_halfwidth=b.ci_halfwidth,
            new_ci_halfwidth=n.ci_halfwidth)


@dataclass
class Comparison:
    rows: list[Row]
    unmatched_base: list[BenchResult] = field(default_factory=list)
    unmatched_new: list[BenchResult] = field(default_factory=list)
    threshold_pct: float = 5.0
    metric: str = "auto"

    def with_verdict(self, verdict: str) -> list[Row]:
        return [row for row in self.rows if row.verdict == verdict]

    def in_category(self, category: str) -> list[Row]:
        """Rows of one ``Row.category`` (a verdict, "within" or "not significant")."""
        return [row for row in self.rows if row.category == category]

    @property
    def regressed(self) -> bool:
        return any(row.verdict == "regressed" for row in self.rows)

    @property
    def sizes(self) -> int:
        """Distinct message sizes among the matched rows (a row is size x placement x ...)."""
        return len({row.base.size_bytes for row in self.rows})

    def records(self, base: str, new: str, argv: list[str]) -> list[dict[str, Any]]:
        """The --json records: the ``compare`` record (``base``/``new`` as given), then one
        ``compare_row`` per row."""
        from collscope import __version__

        head = CompareRecord(
            collscope_version=__version__, argv=argv, base=base, new=new,
            threshold_pct=self.threshold_pct, metric=self.metric, matched=len(self.rows),
            regressed=len(self.with_verdict("regressed")),
            improved=len(self.with_verdict("improved")),
            within_threshold=len(self.in_category("within")),
            not_significant=len(self.in_category("not significant")), sizes=self.sizes,
            unmatched_base=len(self.unmatched_base), unmatched_new=len(self.unmatched_new))
        return [head.to_dict(), *(row.record().to_dict() for row in self.rows)]


def percent_change(base: float, new: float) -> float | None:
    """(new - base) / base in percent; None where base is not a positive number."""
    if base <= 0 or new < 0:
        return None
    return (new - base) / base * 100.0


def slowdown_pct(time_delta: float | None, busbw_delta: float | None,
                 metric: str) -> float | None:
    """How much slower NEW is by ``metric`` ("time" or "busbw"), in percent (+ = slower)."""
    if metric == "time":
        return time_delta
    return None if busbw_delta is None else -busbw_delta


def verdict(time_delta: float | None, busbw_delta: float | None, metric: str,
            threshold_pct: float) -> CompareVerdict:
    """ok / regressed / improved by the chosen metric ("time" or "busbw")."""
    slowdown = slowdown_pct(time_delta, busbw_delta, metric)
    if slowdown is None:
        return "n/a"
    if slowdown > threshold_pct:
        return "regressed"
    if slowdown < -threshold_pct:
        return "improved"
    return "ok"


def compare_row(base: BenchResult, new: BenchResult, threshold_pct: float,
                metric: str = "auto") -> Row:
    time_delta = percent_change(base.time_us, new.time_us)
    busbw_delta = percent_change(base.busbw_gbs, new.busbw_gbs)
    used = metric
    if metric == "auto":
        used = "time" if base.world_size == new.world_size else "busbw"
    if used == "busbw" and busbw_delta is None and base.world_size == new.world_size:
        used = "time"      # busbw printed as 0.00 (tiny sizes): time still says it
    spread = ci_verdict(base, new, used, threshold_pct)
    if spread is not None:
        p50_delta, judged = spread
        return Row(base, new, time_delta, busbw_delta, used, judged, "ci-overlap", p50_delta,
                   change_pct=p50_delta, threshold_pct=threshold_pct)
    return Row(base, new, time_delta, busbw_delta, used,
               verdict(time_delta, busbw_delta, used, threshold_pct),
               change_pct=slowdown_pct(time_delta, busbw_delta, used),
               threshold_pct=threshold_pct)


def _cost(result: BenchResult, metric: str) -> float | None:
    """The median time the verdict compares: p50, divided by the bus factor for busbw."""
    if result.time_us_p50 is None or result.time_us_p50 <= 0:
        return None
    if metric == "busbw":
        factor = bus_factor(result.collective, result.world_size) if result.world_size else 0
        return result.time_us_p50 / factor if factor > 0 else None
    return result.time_us_p50


def ci_verdict(base: BenchResult, new: BenchResult, metric: str,
               threshold_pct: float) -> tuple[float, CompareVerdict] | None:
    """(p50 slowdown in percent, verdict) by the ci-overlap test; None without the spread."""
    if base.ci_halfwidth is None or new.ci_halfwidth is None:
        return None
    base_cost, new_cost = _cost(base, metric), _cost(new, metric)
    if base_cost is None or new_cost is None:
        return None
    slowdown = (new_cost - base_cost) / base_cost * 100.0
    base_low, base_high = base_cost * (1 - base.ci_halfwidth), base_cost * (1 + base.ci_halfwidth)
    new_low, new_high = new_cost * (1 - new.ci_halfwidth), new_cost * (1 + new.ci_halfwidth)
    if slowdown > threshold_pct and new_low > base_high:
        return slowdown, "regressed"
    if slowdown < -threshold_pct and new_high < base_low:
        return slowdown, "improved"
    return slowdown, "ok"


def repeated_row(base: list[BenchResult], new: list[BenchResult], threshold_pct: float,
                 metric: str) -> Row:
    """One row for repeated runs of one key and world size on each side (mann-whitney)."""
    base_times, new_times = [r.time_us for r in base], [r.time_us for r in new]
    time_delta = percent_change(median(base_times), median(new_times))
    busbw_delta = percent_change(median(r.busbw_gbs for r in base),
                                 median(r.busbw_gbs for r in new))
    slower = rank_sum_p(new_times, base_times, "greater")
    faster = rank_sum_p(new_times, base_times, "less")
    # Same world size on both sides, so busbw is a fixed multiple of 1/time per run: the rank
    # test on times decides for either metric; the threshold applies to the metric's delta.
    used = "time" if metric == "auto" else metric
    slowdown = slowdown_pct(time_delta, busbw_delta, used)
    judged: CompareVerdict = "ok"
    p_value = min(slower, faster)
    if slowdown is None:
        judged = "n/a"
    elif slowdown > threshold_pct and slower <= ALPHA:
        judged, p_value = "regressed", slower
    elif slowdown < -threshold_pct and faster <= ALPHA:
        judged, p_value = "improved", faster
    # The row shows the median run of each side.
    representative = [sorted(side, key=lambda r: r.time_us)[(len(side) - 1) // 2]
                      for side in (base, new)]
    return Row(representative[0], representative[1], time_delta, busbw_delta,
               used, judged, "mann-whitney", p_value=p_value, runs=(len(base), len(new)),
               change_pct=slowdown, threshold_pct=threshold_pct)


def _repeated(base: list[BenchResult], new: list[BenchResult],
              ) -> dict[tuple[Key, int], tuple[list[BenchResult], list[BenchResult]]]:
    """Keys (with world size) that both sides ran at least MIN_RUNS times."""
    def groups(results: list[BenchResult]) -> dict[tuple[Key, int], list[BenchResult]]:
        found: dict[tuple[Key, int], list[BenchResult]] = defaultdict(list)
        for r in results:
            found[(match_key(r), r.world_size)].append(r)
        return found

    ours, theirs = groups(base), groups(new)
    return {key: (runs, theirs[key]) for key, runs in ours.items()
            if len(runs) >= MIN_RUNS and len(theirs.get(key, [])) >= MIN_RUNS}


def pair_results(base: list[BenchResult], new: list[BenchResult],
                 ) -> tuple[list[tuple[BenchResult, BenchResult]], list[BenchResult],
                            list[BenchResult]]:
    """(matched pairs in base order, unmatched base, unmatched new); rule in the module doc."""
    new_by_key: dict[Key, list[BenchResult]] = defaultdict(list)
    for result in new:
        new_by_key[match_key(result)].append(result)
    base_by_key: dict[Key, list[BenchResult]] = defaultdict(list)
    for result in base:
        base_by_key[match_key(result)].append(result)

    pairs: list[tuple[BenchResult, BenchResult]] = []
    used_new: set[int] = set()
    unmatched_base: list[BenchResult] = []
    for key, base_group in base_by_key.items():
        new_group = new_by_key.get(key, [])
        if len(base_group) == 1 and len(new_group) == 1:
            pairs.append((base_group[0], new_group[0]))
            used_new.add(id(new_group[0]))
            continue
        free = list(new_group)
        for result in base_group:
            partner = next((r for r in free if r.world_size == result.world_size), None)
            if partner is None:
                # BASE ran this more often than NEW: judge the extra run against NEW's last.
                partner = next((r for r in reversed(new_group)
                                if r.world_size == result.world_size), None)
            if partner is None:
                unmatched_base.append(result)
            else:
                free = [r for r in free if r is not partner]
                pairs.append((result, partner))
                used_new.add(id(partner))
        for extra in free:
            # NEW ran this more often than BASE (a log with a run appended): every run of NEW
            # is judged, against BASE's last run of equal world size.
            partner = next((r for r in reversed(base_group)
                            if r.world_size == extra.world_size), None)
            if partner is not None:
                pairs.append((partner, extra))
                used_new.add(id(extra))
    order = {id(result): index for index, result in enumerate(base)}
    pairs.sort(key=lambda pair: order[id(pair[0])])
    unmatched_new = [result for result in new if id(result) not in used_new]
    return pairs, unmatched_base, unmatched_new


def sort_rows(rows: list[Row], base: list[BenchResult]) -> None:
    """Rows by collective x dtype x op x algo (in the order BASE first has them), then
    placement (out-of-place first), size and world size, whichever test decided them; equal
    keys keep their pairing order."""
    first: dict[tuple[str, str, str, str], int] = {}
    for r in base:
        first.setdefault((r.collective, r.dtype, r.op, r.algo), len(first))
    rows.sort(key=lambda row: (first[(row.base.collective, row.base.dtype, row.base.op,
                                      row.base.algo)], row.base.in_place, row.base.size_bytes,
                               row.base.world_size, row.new.world_size))


def compare(base: list[BenchResult], new: list[BenchResult], threshold_pct: float = 5.0,
            metric: str = "auto", min_bytes: int = 0) -> Comparison:
    """Match ``new`` against ``base`` and judge every matched size (sizes < min_bytes skipped)."""
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r}: use one of {', '.join(METRICS)}")
    if threshold_pct < 0:
        raise ValueError(f"threshold {threshold_pct}: use a percentage >= 0")
    base = [r for r in base if r.size_bytes >= min_bytes]
    new = [r for r in new if r.size_bytes >= min_bytes]
    repeated = _repeated(base, new)
    rows = [repeated_row(b, n, threshold_pct, metric) for b, n in repeated.values()]
    grouped = {id(r) for b, n in repeated.values() for r in (*b, *n)}
    pairs, unmatched_base, unmatched_new = pair_results(
        [r for r in base if id(r) not in grouped], [r for r in new if id(r) not in grouped])
    rows += [compare_row(b, n, threshold_pct, metric) for b, n in pairs]
    sort_rows(rows, base)
    return Comparison(rows, unmatched_base, unmatched_new, threshold_pct, metric)
