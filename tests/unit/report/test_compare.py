"""The compare core: matching rule, deltas and verdicts, table-driven on own samples."""

from __future__ import annotations

import json

import msgspec
import pytest

from collscope.records.bench import BenchResult
from collscope.records.logs import import_file
from collscope.report.compare import compare, compare_row, pair_results, percent_change, verdict
from tests.conftest import fixture_path
from tests.unit.report.samples import result, sweep


def scaled(results: list[BenchResult], factor: float,
           sizes: set[int] | None = None) -> list[BenchResult]:
    """Times x factor (busbw and algbw / factor), for every size or only ``sizes``."""
    return [msgspec.structs.replace(r, time_us=r.time_us * factor, busbw_gbs=r.busbw_gbs / factor,
                                algbw_gbs=r.algbw_gbs / factor)
            if sizes is None or r.size_bytes in sizes else r for r in results]


def test_identical_inputs_match_every_size_and_nothing_regresses() -> None:
    base = sweep("all_reduce") + sweep("all_gather")
    result_ = compare(base, list(base))
    assert len(result_.rows) == len(base)
    assert not result_.regressed
    assert {row.verdict for row in result_.rows} == {"ok"}
    assert all(row.time_delta_pct == 0 and row.busbw_delta_pct == 0 for row in result_.rows)
    assert not result_.unmatched_base and not result_.unmatched_new


def test_slower_sizes_regress_and_only_those() -> None:
    base = sweep()
    slow = {1 << 12, 1 << 21}
    result_ = compare(base, scaled(base, 1.2, slow))
    regressed = result_.with_verdict("regressed")
    assert {row.base.size_bytes for row in regressed} == slow
    assert len(regressed) == 4                     # both placements of both sizes
    assert result_.regressed
    for row in regressed:
        assert row.time_delta_pct == pytest.approx(20.0)
        assert row.busbw_delta_pct == pytest.approx(-100 / 6)


def test_faster_is_improved_and_not_a_regression() -> None:
    base = sweep()
    result_ = compare(base, scaled(base, 0.8))
    assert {row.verdict for row in result_.rows} == {"improved"}
    assert not result_.regressed


@pytest.mark.parametrize("factor, threshold, expected", [
    (1.05, 5.0, "ok"),           # exactly the threshold is not beyond it
    (1.051, 5.0, "regressed"),
    (1.2, 25.0, "ok"),
    (1.2, 0.0, "regressed"),
    (0.94, 5.0, "improved"),
])
def test_threshold_is_strict_percent_slower(factor: float, threshold: float,
                                            expected: str) -> None:
    base = result("all_reduce", 1 << 20, 100.0)
    new = result("all_reduce", 1 << 20, 100.0 * factor)
    assert compare_row(base, new, threshold).verdict == expected


def test_auto_metric_uses_busbw_when_rank_counts_differ() -> None:
    # 16 ranks take longer than 8 for the same size, yet move more bus bytes per second.
    base = result("all_reduce", 1 << 30, 10_000.0, world_size=8)
    new = result("all_reduce", 1 << 30, 10_500.0, world_size=16)
    row = compare_row(base, new, 5.0)
    assert row.metric == "busbw" and row.verdict == "ok"
    assert row.busbw_delta_pct == pytest.approx((1.875 / 1.75 / 1.05 - 1) * 100)
    # Judged by time alone the 16-rank run is 5% "slower": a regression at 4%.
    by_time = compare_row(base, new, 4.0, metric="time")
    assert by_time.metric == "time" and by_time.verdict == "regressed"


def test_zero_busbw_of_tiny_sizes_falls_back_to_time() -> None:
    base = msgspec.structs.replace(result("all_reduce", 8, 20.0), busbw_gbs=0.0, algbw_gbs=0.0)
    new = msgspec.structs.replace(result("all_reduce", 8, 30.0), busbw_gbs=0.0, algbw_gbs=0.0)
    row = compare_row(base, new, 5.0, metric="busbw")
    assert row.busbw_delta_pct is None
    assert row.metric == "time" and row.verdict == "regressed"


def test_verdict_without_numbers_is_na() -> None:
    assert verdict(None, None, "time", 5.0) == "n/a"
    assert percent_change(0.0, 3.0) is None


def test_matching_needs_collective_dtype_op_placement_size_and_algo() -> None:
    base = [result("all_reduce", 1024, 10.0)]
    for other in (result("all_gather", 1024, 10.0), result("all_reduce", 1024, 10.0,
                                                            dtype="half"),
                  result("all_reduce", 1024, 10.0, op="max"),
                  result("all_reduce", 1024, 10.0, in_place=False),
                  result("all_reduce", 2048, 10.0),
                  msgspec.structs.replace(result("all_reduce", 1024, 10.0), algo="hierarchical")):
        comparison = compare(base, [other])
        assert comparison.rows == []
        assert comparison.unmatched_base == base and comparison.unmatched_new == [other]


def test_several_runs_of_a_key_pair_by_world_size_in_order() -> None:
    # One log with 1-, 2-, 4-node runs against another with 2- and 4-node runs only.
    base = [result("all_reduce", 1 << 32, t, world_size=n) for n, t in ((8, 100.0), (16, 200.0),
                                                                       (32, 300.0))]
    new = [result("all_reduce", 1 << 32, t, world_size=n) for n, t in ((32, 330.0), (16, 200.0))]
    pairs, unmatched_base, unmatched_new = pair_results(base, new)
    assert [(b.world_size, n.world_size) for b, n in pairs] == [(16, 16), (32, 32)]
    assert [r.world_size for r in unmatched_base] == [8]
    assert unmatched_new == []
    comparison = compare(base, new)
    assert [row.verdict for row in comparison.rows] == ["ok", "regressed"]


def test_min_bytes_leaves_small_sizes_out() -> None:
    base = sweep()
    comparison = compare(base, scaled(base, 2.0, {8}), min_bytes=64)
    assert not comparison.regressed
    assert min(row.base.size_bytes for row in comparison.rows) >= 64


@pytest.mark.parametrize("kwargs", [{"metric": "speed"}, {"threshold_pct": -1.0}])
def test_bad_settings_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        compare(sweep(), sweep(), **kwargs)


def test_records_are_plain_json_with_both_sides() -> None:
    base = sweep()
    records = compare(base, scaled(base, 1.2)).records("b.jsonl", "n.jsonl", ["collscope"])
    head, *rows = json.loads(json.dumps(records, allow_nan=False))
    assert head["kind"] == "compare" and (head["base"], head["new"]) == ("b.jsonl", "n.jsonl")
    assert head["regressed"] == head["matched"] == len(base) == len(rows)
    row = rows[0]
    assert row["kind"] == "compare_row"
    assert {"size_bytes", "base_time_us", "new_time_us", "time_delta_pct", "base_busbw_gbs",
            "new_busbw_gbs", "busbw_delta_pct", "verdict"} <= set(row)


def test_real_log_against_itself_and_a_slower_copy() -> None:
    results = [r for run in import_file(fixture_path("nccl-tests-logs",
                                                       "mi300x_8gpu_allreduce_rccl_k8s.txt"))
               for r in run.results]
    assert not compare(results, results).regressed
    slower = compare(results, scaled(results, 1.2))
    assert len(slower.with_verdict("regressed")) == len(results) == 62


def with_spread(r: BenchResult, p50: float, halfwidth: float) -> BenchResult:
    return msgspec.structs.replace(r, time_us=p50, time_us_p50=p50, ci_halfwidth=halfwidth)


def test_noise_at_a_small_size_does_not_fail_the_gate_when_spread_is_recorded() -> None:
    # 8 B all_reduce: p50 10 us +-30% (95% CI of the median) against 12 us +-30%.
    base = with_spread(result("all_reduce", 8, 10.0), 10.0, 0.3)
    new = with_spread(result("all_reduce", 8, 12.0), 12.0, 0.3)
    row = compare_row(base, new, 5.0)
    assert (row.test, row.verdict) == ("ci-overlap", "ok")
    assert row.p50_delta_pct == pytest.approx(20.0)
    # The same numbers without a recorded spread (an nccl-tests log) regress on the threshold.
    bare = compare_row(msgspec.structs.replace(base, ci_halfwidth=None), new, 5.0)
    assert (bare.test, bare.verdict) == ("threshold", "regressed")


@pytest.mark.parametrize("new_p50, expected", [(130.0, "regressed"), (104.0, "ok"),
                                               (70.0, "improved")])
def test_ci_overlap_decides_real_changes(new_p50: float, expected: str) -> None:
    base = with_spread(result("all_reduce", 1 << 20, 100.0), 100.0, 0.02)
    new = with_spread(result("all_reduce", 1 << 20, new_p50), new_p50, 0.02)
    row = compare_row(base, new, 5.0)
    assert (row.test, row.verdict) == ("ci-overlap", expected)
    assert row.record().test == "ci-overlap"


def test_ci_overlap_under_busbw_normalises_by_the_bus_factor() -> None:
    # 8 -> 16 ranks: time up 5%, bus factor 1.75 -> 1.875, so busbw is no worse.
    base = with_spread(result("all_reduce", 1 << 30, 10_000.0, world_size=8), 10_000.0, 0.01)
    new = with_spread(result("all_reduce", 1 << 30, 10_500.0, world_size=16), 10_500.0, 0.01)
    row = compare_row(base, new, 4.0)
    assert (row.metric, row.test, row.verdict) == ("busbw", "ci-overlap", "ok")


def test_render_names_the_deciding_test(capsys) -> None:
    from collscope.report.compare_text import render

    base = [with_spread(result("all_reduce", 1 << 20, 100.0), 100.0, 0.02),
            result("all_reduce", 1 << 21, 100.0)]
    new = [with_spread(result("all_reduce", 1 << 20, 130.0), 130.0, 0.02),
           result("all_reduce", 1 << 21, 100.0)]
    render(compare(base, new), "base", "new")
    out = capsys.readouterr().out
    assert "ci-overlap (p50 +30.0%)" in out
    assert ("decided by: ci-overlap (p50 beyond the threshold and non-overlapping 95% CIs of "
            "the medians) for 1 row(s); threshold") in out


def runs(times: list[float], size: int = 1 << 20) -> list[BenchResult]:
    return [result("all_reduce", size, t) for t in times]


def test_repeated_runs_per_side_are_judged_by_mann_whitney() -> None:
    base = runs([100.0, 104.0, 98.0, 101.0])
    slower = runs([118.0, 121.0, 117.0, 125.0])
    row, = compare(base, slower).rows
    assert (row.test, row.verdict, row.runs) == ("mann-whitney", "regressed", (4, 4))
    assert row.time_delta_pct == pytest.approx((119.5 - 100.5) / 100.5 * 100)
    assert row.p_value == pytest.approx(1 / 70)       # exact one-sided U, 4 against 4
    assert row.record().p_value == row.p_value
    # Medians 20% apart but the runs overlap: not significant, so not a regression.
    noisy = runs([60.0, 140.0, 118.0, 125.0])
    row, = compare(base, noisy).rows
    assert (row.test, row.verdict) == ("mann-whitney", "ok")
    assert row.p_value > 0.05


def test_repeated_runs_judge_busbw_by_the_busbw_delta() -> None:
    """+5.15% time is -4.9% busbw: under a 5% busbw threshold that is no regression."""
    base = runs([100.0, 100.5, 99.5, 100.2])
    slower = [t * 1.0515 for t in (100.0, 100.5, 99.5, 100.2)]
    row, = compare(base, runs(slower), threshold_pct=5.0, metric="busbw").rows
    assert row.test == "mann-whitney" and row.metric == "busbw"
    assert row.busbw_delta_pct == pytest.approx(-4.9, abs=0.05)
    assert row.verdict == "ok"
    row, = compare(base, runs(slower), threshold_pct=5.0, metric="time").rows
    assert row.verdict == "regressed"


def test_fewer_than_three_runs_keep_the_pairing_in_order() -> None:
    base, new = runs([100.0, 100.0]), runs([130.0, 100.0])
    comparison = compare(base, new)
    assert [row.test for row in comparison.rows] == ["threshold", "threshold"]
    assert [row.verdict for row in comparison.rows] == ["regressed", "ok"]


def test_a_large_change_that_is_not_significant_is_not_called_within_the_threshold(
        capsys) -> None:
    from collscope.report.compare_text import render

    # ci-overlap: p50 +419% but CIs of +-90% overlap; one real regression; one unchanged size.
    wide = [with_spread(result("all_reduce", 1 << 17, 100.0), 100.0, 0.9),
            with_spread(result("all_reduce", 1 << 18, 100.0), 100.0, 0.01),
            with_spread(result("all_reduce", 1 << 19, 100.0), 100.0, 0.01)]
    new = [with_spread(wide[0], 519.0, 0.9), with_spread(wide[1], 300.0, 0.01), wide[2]]
    comparison = compare(wide, new)
    assert [(row.verdict, row.category) for row in comparison.rows] == [
        ("ok", "not significant"), ("regressed", "regressed"), ("ok", "within")]
    assert comparison.rows[0].change_pct == pytest.approx(419.0)
    counts = comparison.records("base", "new", [])[0]
    assert (counts["within_threshold"], counts["not_significant"], counts["sizes"]) == (1, 1, 3)
    render(comparison, "base", "new")
    out = capsys.readouterr().out
    assert ("matched 3 rows (collective x placement x size; 3 distinct sizes): 1 regressed, 0 "
            "improved, 1 within +-5%, 1 changed beyond +-5% but not significant") in out
    assert "CHANGED beyond 5% but NOT SIGNIFICANT (the 95% CIs of the medians overlap" in out
    assert "  all_reduce float sum in-place: 128 KiB" in out
    assert "| not significant |" in out or "│ not significant │" in out


def test_mann_whitney_rows_are_sorted_and_counted_as_rows_over_sizes(capsys) -> None:
    from collscope.report.compare_text import render

    # Three runs a side, every new time x3 but one base run as slow: +200%, p = 0.2 (not
    # significant). The base lists 2 MiB before 1 MiB and in-place before out-of-place.
    base, new = [], []
    for size in (1 << 21, 1 << 20):
        for in_place in (True, False):
            base += [result("all_reduce", size, t, in_place=in_place) for t in (100, 100, 300)]
            new += [result("all_reduce", size, t, in_place=in_place) for t in (300, 300, 300)]
    comparison = compare(base, new)
    assert [(row.base.in_place, row.base.size_bytes) for row in comparison.rows] == [
        (False, 1 << 20), (False, 1 << 21), (True, 1 << 20), (True, 1 << 21)]
    assert {(row.test, row.category) for row in comparison.rows} == {
        ("mann-whitney", "not significant")}
    assert all(row.change_pct == pytest.approx(200.0) and row.p_value > 0.05
               for row in comparison.rows)
    render(comparison, "base", "new")
    out = capsys.readouterr().out
    assert ("matched 4 rows (collective x placement x size; 2 distinct sizes): 0 regressed, 0 "
            "improved, 0 within +-5%, 4 changed beyond +-5% but not significant") in out
    assert "NOT SIGNIFICANT (Mann-Whitney U p > 0.05;" in out
    assert "within +-5% (judged" not in out


def test_a_slower_run_appended_to_new_is_judged_and_regresses() -> None:
    # NEW = the same log with a second, 50% slower run appended (review item 5): before, only
    # the first (good) run was paired and the slow one was left "unmatched" with exit 0.
    (run,) = import_file(fixture_path("nccl-tests-logs", "mi300x_8gpu_allreduce_rccl_k8s.txt"))
    base = run.results
    slow = scaled(base, 1.5)
    comparison = compare(base, base + slow)
    assert comparison.regressed
    assert comparison.unmatched_new == [] and comparison.unmatched_base == []
    assert len(comparison.rows) == 2 * len(base)
    regressed = comparison.with_verdict("regressed")
    assert len(regressed) == len(base)
    assert all(row.new in slow and row.time_delta_pct == pytest.approx(50.0) for row in regressed)
    # The other way round (BASE holds two runs, NEW one): NEW is judged against both.
    both = compare(base + slow, base)
    assert len(both.rows) == 2 * len(base) and not both.regressed
    assert len(both.with_verdict("improved")) == len(base)


def test_an_extra_run_of_another_world_size_stays_unmatched() -> None:
    base = [result("all_reduce", 1 << 20, 10.0, world_size=8)]
    new = base + [result("all_reduce", 1 << 20, 99.0, world_size=16)]
    comparison = compare(base, new)
    assert [row.verdict for row in comparison.rows] == ["ok"]
    assert [r.world_size for r in comparison.unmatched_new] == [16]
