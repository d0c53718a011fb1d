"""`collscope report` draws `collscope watch --json`: each rank's lateness over time with the
straggler episodes marked, the pending ages on a stall, and the run's headline.

The three inputs are real watch runs of the DDP script (tests/fixtures/own/watch/README.md);
the expected values are read from the raw records here, not from the charts' own code.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collscope.records.load import load_input, parse_input
from collscope.records.watch import (
    AgentCostRecord,
    StragglerFinding,
    WatchJobRecord,
    WatchWindowRecord,
)
from collscope.report import charts as ch
from collscope.report.charts.watch import FLAGGED_COLOR, MAX_RANK_SERIES
from collscope.report.html import all_charts, render_report
from tests.conftest import fixture_path

STRAGGLER = "watch_4ranks_gloo_straggler_rank2.jsonl"
HEALTHY = "watch_4ranks_gloo_healthy.jsonl"
STALL = "watch_4ranks_gloo_stall_rank2.jsonl"


def _path(name: str) -> Path:
    return fixture_path("own", "watch", name)


def _raw(name: str) -> list[dict]:
    return [json.loads(line) for line in _path(name).read_text().splitlines()]


def _windows(name: str) -> tuple[float, list[dict]]:
    """(the first window's time, the full windows: those of 12 matched collectives)."""
    windows = [r for r in _raw(name) if r["kind"] == "watch_window"]
    return min(w["time"] for w in windows), [w for w in windows if w["window"] == 12]


def _by_label(chart: ch.LineChart) -> dict[str, ch.Series]:
    return {s.label: s for s in chart.series}


def test_the_straggler_is_rank_2_rising_to_30_ms_with_its_flagged_stretch_in_red() -> None:
    run = load_input(_path(STRAGGLER)).runs[0]
    (chart,) = ch.watch_charts([load_input(_path(STRAGGLER))])
    start, full = _windows(STRAGGLER)
    series = _by_label(chart)
    flagged = [w for w in full if w["straggler"]]
    assert {w["rank"] for w in flagged} == {2}
    stretch = f"rank 2 (vm) flagged {flagged[0]['time'] - start:.1f}–" \
              f"{flagged[-1]['time'] - start:.1f} s"
    assert list(series) == ["rank 0 (vm)", "rank 1 (vm)", "rank 2 (vm)", "rank 3 (vm)",
                            stretch] and stretch == "rank 2 (vm) flagged 3.0–7.1 s"
    for rank in range(4):
        assert series[f"rank {rank} (vm)"].points == [
            (w["time"] - start, w["lateness_ms"]) for w in full if w["rank"] == rank]
    red = series[stretch]
    assert red.color == FLAGGED_COLOR and red.marker == "square"
    assert red.points == [(w["time"] - start, w["lateness_ms"]) for w in flagged]
    # The planted 30 ms, and nobody else late: the stretch is the rank's late windows.
    assert all(29 < y < 33 for _, y in red.points) and len(red.points) == 9
    assert max(y for r in (0, 1, 3) for _, y in series[f"rank {r} (vm)"].points) < 2
    late = [w for w in full if w["rank"] == 2 and w["lateness_ms"] > 10]
    assert late == flagged
    (started, ended) = [r for r in _raw(STRAGGLER) if r["kind"] == "finding"]
    assert (f"Episodes: rank 2 (vm) late since +{started['since'] - start:.1f} s, named "
            f"+{started['time'] - start:.1f} s, ended +{ended['time'] - start:.1f} s.") \
        in chart.note
    assert "Episodes: rank 2 (vm) late since +2.2 s, named +3.0 s, ended +7.6 s." in chart.note
    assert "Red: the windows in which watch flagged the rank a straggler." in chart.note
    assert chart.x_log is False and chart.y_log is False
    assert run.watch and not run.trace


def test_the_straggler_headline_says_who_when_how_late_and_the_p_values() -> None:
    headline = ch.watch_headline(load_input(_path(STRAGGLER)).runs[0])
    assert headline.level == "warn"
    assert headline.text == (f"{STRAGGLER}: straggler(s) named: rank 2 (vm) in group 0, 30.1 ms "
                             "late (was 0.227 ms), from +3.0 s to +7.6 s")
    job, episode, test, rounds = headline.details
    assert job == ("job: 4 ranks on 1 host(s) (vm), backend gloo; clocks: every rank on one "
                   "host: one clock")
    # a file written before findings carried shape, groups and cost still reads
    assert episode.startswith("rank 2 (vm) in group(s) 0: late since +2.2 s (00:13:24 UTC), "
                              "named +3.0 s, ended +7.6 s (00:13:30 UTC); median lateness "
                              "30.1 ms, baseline 0.227 ms, made the others wait 647 ms; late "
                              "in 10/12;")
    assert episode.endswith("binomial p=0.00015 (Bonferroni x ranks), Mann-Whitney p=0.00033")
    assert test.startswith("test: per (group, seq): lateness = enqueue time")
    assert rounds.startswith("18 rounds of windows from 4 ranks over 8.6 s")
    assert rounds.endswith("highest window lateness 31.5 ms: rank 2 (vm) in group 0 at +4.5 s")


def test_a_healthy_run_names_nobody_and_leaves_out_the_start_up_windows() -> None:
    source = load_input(_path(HEALTHY))
    headline = ch.watch_headline(source.runs[0])
    assert (headline.level, headline.text) == (
        "pass", f"{HEALTHY}: no straggler named over 24 windows of 4 ranks (12 s)")
    (chart,) = ch.watch_charts([source])
    assert [s.label for s in chart.series] == [f"rank {r} (vm)" for r in range(4)]
    assert FLAGGED_COLOR not in {s.color for s in chart.series}
    start, full = _windows(HEALTHY)
    drawn = sorted(p for s in chart.series for p in s.points)
    assert drawn == sorted((w["time"] - start, w["lateness_ms"]) for w in full)
    # The first two rounds held 1 and 11 collectives; the 1-collective one was init's
    # broadcast, rank 0 320 ms ahead: left out, said with its size, not drawn over 2 ms.
    partial = [w for w in _raw(HEALTHY) if w["kind"] == "watch_window" and w["window"] < 12]
    assert len({w["time"] for w in partial}) == 2 and max(y for _, y in drawn) < 2.5
    assert "Not drawn: the first 2 round(s)" in chart.note and "up to 320 ms" in chart.note
    assert "No straggler named in this group." in chart.note
    assert "highest window lateness 1.96 ms: rank 0 (vm)" in headline.details[-1]


def test_a_stall_is_the_headline_with_hangs_blame_and_the_waits_climbing() -> None:
    source = load_input(_path(STALL))
    run = source.runs[0]
    headline = ch.watch_headline(run)
    (stall,) = [r for r in _raw(STALL) if r["kind"] == "watch_stall"]
    (verdict,) = [r for r in _raw(STALL) if r["kind"] == "hang_verdict"]
    assert headline.level == "fail"
    assert headline.text == (f"{STALL}: STALL: rank 1's all_reduce #36 of group 0 pending "
                             "10.4 s at +12.1 s; collscope hang blames rank(s) 2")
    assert headline.details[0] == f"hang verdict: {verdict['headline']}"
    lateness, pending = ch.watch_charts([source])
    assert pending.id == f"watch_pending_{STALL}" and pending.y_label == "age (s)"
    series = _by_label(pending)
    start, _ = _windows(STALL)
    for rank in (0, 1, 3):
        t, age = series[f"rank {rank} (vm)"].points[-1]
        assert age >= 9.8 and abs(t - (stall["time"] - start)) < 1.0
    # Rank 2 never entered all_reduce #36: nothing pending on it while the others wait.
    assert [age for t, age in series["rank 2 (vm)"].points if t > 2] == \
        [0.0] * sum(t > 2 for t, _ in series["rank 2 (vm)"].points)
    assert "collscope hang blames rank(s) 2." in pending.note
    assert "the run's pending chart shows the others' waits climbing" in lateness.note
    assert "Red:" not in lateness.note
    page = render_report([source], generated_at=0)
    assert page.index('<section id="hang">') < page.index('<section id="watch">')


def _many_ranks(ranks: int = 16, slow: int = 5, finding: dict | None = None) -> str:
    """A 16-rank job on two hosts, rank 5 30 ms late in rounds 10-29 and flagged in 15-29."""
    records: list[dict] = [{"kind": "run", "command": "watch"}, WatchJobRecord(
        1000.0, ranks, "nccl", [], ["a", "b"], {"reason": "2 hosts"}, {}, {}).to_dict()]
    for i in range(40):
        for r in range(ranks):
            late = 30.0 if r == slow and 10 <= i < 30 else 0.5 + (r * 7 + i * 3) % 11 / 10
            records.append(WatchWindowRecord(
                1000 + i, r, "a" if r < 8 else "b", r % 8, "0", 12, late, 0, 0.0, {}, None,
                r == slow and 15 <= i < 30).to_dict())
        if i in (15, 30):
            state = "started" if i == 15 else "ended"
            records.append(StragglerFinding(
                state, 1000 + i, slow, "a", slow, "0", 1010.0, 30.0, 0.5, 300.0, 12, 12,
                1e-5, 2e-5, "title", "binomial p=1e-05, Mann-Whitney p=2e-05; method").to_dict()
                | (finding or {}))
    return "".join(json.dumps(r) + "\n" for r in records)


def test_the_episode_says_its_shape_groups_followers_and_cost() -> None:
    text = _many_ranks(finding={"shape": "onset", "ranks": [5], "groups": ["0", "3"],
                                "followers": [4], "cost_pct": 31.2,
                                "layout": "16 ranks, 3 group(s) (1 of 16, 2 of 8)"})
    (_, episode, *_) = ch.watch_headline(parse_input(text, "big.jsonl").runs[0]).details
    assert episode.startswith("rank 5 (a) (onset) in group(s) 0, 3: late since")
    assert "; cost 31.2 % of the job's time; delays rank(s) 4; layout 16 ranks, 3 group(s) " \
           "(1 of 16, 2 of 8); late in 12/12; binomial p=1e-05" in episode


def test_many_ranks_keep_the_flagged_one_and_draw_the_rest_as_median_and_highest() -> None:
    source = parse_input(_many_ranks(), "big.jsonl")
    (chart,) = ch.watch_charts([source])
    series = _by_label(chart)
    assert list(series) == ["rank 5 (a)", "median of the other 15 ranks",
                            "highest of the other 15 ranks", "rank 5 (a) flagged 15.0–29.0 s"]
    records = [json.loads(line) for line in _many_ranks().splitlines()]
    others = [r for r in records if r["kind"] == "watch_window" and r["rank"] != 5]
    for i in (0, 17, 39):
        at = [r["lateness_ms"] for r in others if r["time"] == 1000 + i]
        assert series["median of the other 15 ranks"].points[i] == (i, statistics.median(at))
        top = max((r for r in others if r["time"] == 1000 + i), key=lambda r: r["lateness_ms"])
        assert series["highest of the other 15 ranks"].points[i] == (i, max(at))
        assert series["highest of the other 15 ranks"].tips[i].startswith(
            f"rank {top['rank']} ({top['host']}), group 0")
    assert len(chart.series) <= MAX_RANK_SERIES + 3
    assert chart.note.startswith("16 ranks: 1 drawn one by one")
    headline = ch.watch_headline(source.runs[0])
    assert headline.text == ("big.jsonl: straggler(s) named: rank 5 (a) in group 0, 30 ms late "
                             "(was 0.5 ms), from +15.0 s to +30.0 s")
    assert headline.details[0] == ("job: 16 ranks on 2 host(s) (a, b), backend nccl; clocks: "
                                   "2 hosts")
    assert "test: method" in headline.details


def _flagged_ranks(ranks: int, flagged_rounds: dict[int, int]) -> str:
    """``ranks`` ranks over 20 rounds; rank r flagged (and 30 ms late) in its last
    ``flagged_rounds[r]`` rounds."""
    records: list[dict] = [{"kind": "run", "command": "watch"}]
    for i in range(20):
        for r in range(ranks):
            flagged = i >= 20 - flagged_rounds.get(r, 0)
            records.append(WatchWindowRecord(
                float(i), r, "h", r, "0", 12, 30.0 if flagged else 0.5, 0, 0.0, {}, None,
                flagged).to_dict())
    return "".join(json.dumps(r) + "\n" for r in records)


def test_over_8_flagged_ranks_the_most_flagged_keep_their_lines() -> None:
    counts = {r: r for r in range(1, 11)}          # rank 10 flagged longest, rank 1 shortest
    (chart,) = ch.watch_charts([parse_input(_flagged_ranks(32, counts), "x.jsonl")])
    alone = [s.label for s in chart.series if s.color not in (FLAGGED_COLOR,)
             and not s.label.startswith(("median", "highest"))]
    assert alone == [f"rank {r} (h)" for r in range(3, 11)]
    assert len([s for s in chart.series if s.color == FLAGGED_COLOR]) == 8
    assert chart.note.startswith("32 ranks: 8 drawn one by one (flagged or blamed; 2 more not "
                                 "drawn alone, nor their flagged windows), the other 24 as")
    (healthy,) = ch.watch_charts([parse_input(_flagged_ranks(32, {}), "y.jsonl")])
    assert [s.label for s in healthy.series] == ["median of the other 32 ranks",
                                                 "highest of the other 32 ranks"]
    assert healthy.note.startswith("32 ranks: none flagged or blamed, all as their median")


def test_the_report_page_and_pngs_hold_the_watch_charts() -> None:
    inputs = [load_input(_path(name)) for name in (STRAGGLER, HEALTHY)]
    page = render_report(inputs, generated_at=0)
    section = page.split('<section id="watch"><h2>Watched jobs</h2>')[1]
    assert section.startswith('<div class="headline warn"><p class="verdict">'
                              f"{STRAGGLER}: straggler(s) named: rank 2 (vm)")
    assert '<div class="headline pass">' in section.split("<svg")[0]
    assert f'id="svg-watch_lateness_{STRAGGLER}_0"' in section
    assert [c.id for c in all_charts(inputs)] == [f"watch_lateness_{STRAGGLER}_0",
                                                  f"watch_lateness_{HEALTHY}_0"]


def test_a_run_without_watch_records_has_no_watch_headline() -> None:
    text = '{"kind": "run", "command": "hang"}\n{"kind": "hang_verdict", "headline": "x"}\n'
    assert ch.watch_headline(parse_input(text, "h.jsonl").runs[0]) is None
    job_only = ('{"kind": "run", "command": "watch"}\n'
                + json.dumps(WatchJobRecord(1.0, 2, "gloo", [], ["a"], {}, {}, {}).to_dict()))
    source = parse_input(job_only, "j.jsonl")
    assert ch.watch_charts([source]) == []
    assert ch.watch_headline(source.runs[0]).text == (
        "j.jsonl: no window: no collective was matched across the ranks")


_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 40), st.text(max_size=4),
                    st.floats(allow_nan=True, allow_infinity=True),
                    st.lists(st.integers(-1, 4), max_size=3),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_fields = st.sampled_from(["time", "rank", "host", "group", "window", "lateness_ms",
                           "arrived_last", "wait_caused_ms", "oldest_pending_s", "straggler",
                           "state", "since", "baseline_ms", "p_last", "p_rise", "test",
                           "hosts", "clock", "world_size", "no_answer", "detected_by",
                           "pending_s", "culprit_ranks", "headline", "busbw_gbs",
                           "backend"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["watch_job", "watch_window", "watch_stall",
                                           "finding", "hang_verdict"]),
                          st.dictionaries(_fields, _values, max_size=10)), max_size=10))
def test_odd_watch_records_never_break_the_charts_or_the_page(records: list) -> None:
    lines = ['{"kind": "run", "command": "watch"}']
    for kind, fields in records:
        extra = {"id": "watch.straggler"} if kind == "finding" else {}
        lines.append(json.dumps({**fields, **extra, "kind": kind}))
    source = parse_input("\n".join(lines), "odd.jsonl")
    ch.watch_charts([source])
    ch.watch_headline(source.runs[0])
    render_report([source], 0.0)


def test_the_agents_cost_and_notices_are_in_the_headlines_details() -> None:
    from collscope.records.watch import AgentCostRecord, NoticeRecord

    extra = [AgentCostRecord(1.0, r, "vm", 0.01, 0.06 + 0.02 * r, 20.0, (0.06 + 0.02 * r) / 20,
                             20, 0.05, 1.0, 5 * (r == 3)).to_dict() for r in range(4)]
    extra.append(NoticeRecord(1.0, 3, "fr_overflow", "rank 3: the Flight Recorder's ring "
                              "overwrote 5 entries between two reads").to_dict())
    text = _path(HEALTHY).read_text() + "".join(json.dumps(r) + "\n" for r in extra)
    source = parse_input(text, HEALTHY)
    assert not source.warnings
    details = ch.watch_headline(source.runs[0]).details
    assert "rank 3: the Flight Recorder's ring overwrote 5 entries between two reads" in details
    # shares 0.30, 0.40, 0.50, 0.60 % of a core: median 0.45 %, most rank 3
    assert any(d.startswith("agent cost: median 0.45 % of a core per rank") and
               "most: rank 3 (vm) 0.60 %" in d for d in details)


def _with_busbw(name: str, busbw_of) -> str:
    """The real run's records, its windows given the busbw ``busbw_of(window)`` and its job
    the backend nccl (as a timed NCCL job's records would read)."""
    lines = []
    for record in _raw(name):
        if record["kind"] == "watch_window":
            record["busbw_gbs"] = busbw_of(record)
        elif record["kind"] == "watch_job":
            record["backend"] = "nccl"
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


def test_the_lowest_ranks_busbw_per_collective_is_in_the_headlines_details() -> None:
    def busbw(window: dict) -> dict | None:
        if window["rank"] == 1 and window["window"] < 12:
            return None                           # an interval without timed calls
        return {"all_reduce": 150.0 + 10 * window["rank"] + window["window"] % 2}

    source = parse_input(_with_busbw(HEALTHY, busbw), HEALTHY)
    (detail,) = [d for d in ch.watch_headline(source.runs[0]).details if d.startswith("busbw")]
    expected = {}
    for w in _raw(HEALTHY):
        if w["kind"] == "watch_window" and busbw(w) is not None:
            expected.setdefault(w["rank"], []).append(busbw(w)["all_reduce"])
    medians = {r: statistics.median(v) for r, v in expected.items()}
    assert min(medians, key=medians.get) == 0
    assert detail.startswith(
        "busbw (each rank's median over its windows): group 0 all_reduce: lowest rank 0 (vm) "
        f"{ch.format_number(medians[0])} GB/s, median of 4 ranks "
        f"{ch.format_number(statistics.median(medians.values()))} GB/s (nccl-tests' busbw")


def test_an_nccl_run_without_durations_says_how_to_get_busbw_and_gloo_says_nothing() -> None:
    nccl = parse_input(_with_busbw(HEALTHY, lambda w: None), HEALTHY)
    details = ch.watch_headline(nccl.runs[0]).details
    assert any(d.startswith("busbw: not known") and "TORCH_NCCL_ENABLE_TIMING=1" in d
               for d in details)
    gloo = load_input(_path(HEALTHY))
    assert not any("busbw" in d for d in ch.watch_headline(gloo.runs[0]).details)


def test_the_agents_costs_are_said_and_a_cost_record_cut_short_is_named() -> None:
    cost = AgentCostRecord(time=1.0, rank=3, host="vm", setup_cpu_s=0.1, cpu_s=0.4, wall_s=100.0,
                           cpu_share=0.004, ticks=200, read_cpu_s=0.2, interval_s=0.5,
                           lost_entries=0)
    text = (_path(HEALTHY).read_text() + json.dumps(cost.to_dict()) + "\n"
            + json.dumps({"kind": "watch_agent", "cpu_share": 0.004}) + "\n")
    source = parse_input(text, HEALTHY)
    details = ch.watch_headline(source.runs[0]).details
    assert any(d.startswith("agent cost: median 0.40 % of a core per rank") and
               "most: rank 3 (vm) 0.40 %" in d for d in details)
    (warning,) = source.warnings
    assert warning.endswith("watch_agent record without time, rank, host, setup_cpu_s, cpu_s, "
                            "wall_s, ticks, read_cpu_s, interval_s, lost_entries; skipped")
