"""`collscope watch --json` records as chart specs: each rank's lateness over time per process
group, the straggler episodes marked on it, and on a stall each rank's oldest pending
collective; and the run's headline (the job, the episodes, the stall, or a healthy verdict).

Many ranks: up to ``MAX_RANK_SERIES`` ranks are drawn one by one. Beyond that a line per rank
is a tangle nobody reads, and what the chart is for is the rank that left the pack: so the
ranks watch ever flagged (or, on a stall, the ranks that `collscope hang` blamed and the one
that saw the stall) keep their own lines, and the others are drawn as two lines per round,
their median and their highest (the highest keeps a late rank that was never flagged in
sight; its tooltip names it). Pure: runs in, specs out.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from collscope.records.hang import HangVerdictRecord
from collscope.records.load import Input, Run
from collscope.records.watch import (
    BUSBW_METHOD,
    STRAGGLER_ID,
    AgentCostRecord,
    NoticeRecord,
    StallRecord,
    StragglerFinding,
    WatchJobRecord,
    WatchWindowRecord,
    cost_line,
)
from collscope.report.charts.axes import format_number
from collscope.report.charts.monitor import decimate
from collscope.report.charts.spec import PALETTE, Headline, LineChart, Series, as_number, slug

MAX_RANK_SERIES = 8
MAX_POINTS = 1000
# Red marks what watch flagged; grey the summary of the unflagged ranks; ranks get the rest.
FLAGGED_COLOR, MEDIAN_COLOR, HIGHEST_COLOR = PALETTE[3], PALETTE[7], PALETTE[5]
RANK_COLORS = tuple(c for c in PALETTE if c not in (FLAGGED_COLOR, MEDIAN_COLOR, HIGHEST_COLOR))


@dataclass
class Episode:
    """One straggler episode: its ``started`` finding and its ``ended`` one (None: the file
    ends while the rank is still flagged, e.g. the wrapper was killed)."""

    started: StragglerFinding
    ended: StragglerFinding | None

    @property
    def rank(self) -> int:
        return self.started.rank

    @property
    def group(self) -> str:
        return self.started.group

    @property
    def host(self) -> str:
        return self.started.host


@dataclass
class _Point:
    t: float                          # seconds since the run's first window
    value: float
    rank: int
    host: str
    flagged: bool
    tip: str


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def windows(run: Run) -> list[WatchWindowRecord]:
    return run.of(WatchWindowRecord)


def episodes(run: Run) -> list[Episode]:
    """The straggler findings paired per (group, rank) in file order: each ``started`` with
    the next ``ended`` of the same rank and group."""
    out: list[Episode] = []
    open_: dict[tuple[str, int], Episode] = {}
    for record in run.of(StragglerFinding):
        if record.id != STRAGGLER_ID:
            continue
        key = (record.group, record.rank)
        if record.state == "started":
            open_[key] = Episode(record, None)
            out.append(open_[key])
        elif record.state == "ended" and key in open_:
            open_.pop(key).ended = record
    return out


def _start(run: Run) -> float | None:
    """The time of the run's first window: every chart and headline of the run counts from it."""
    times = [float(w.time) for w in windows(run)]
    return min(times) if times else None


def _rank_name(rank: int, host: str) -> str:
    return f"rank {rank} ({host})"


def _series(points_by_rank: dict[int, list[_Point]], picked: list[int], unit: str,
            key: str) -> tuple[list[Series], str]:
    """A line per rank (all of them when few, else the first MAX_RANK_SERIES of ``picked``,
    most important first), the median and highest of the rest per round, and a red overlay
    per stretch of windows watch flagged on a rank with its own line. Returns the series and
    a sentence on how the ranks were drawn ("" when every rank has its line)."""
    ranks = sorted(points_by_rank)
    alone = ranks if len(ranks) <= MAX_RANK_SERIES else sorted(
        [r for r in dict.fromkeys(picked) if r in points_by_rank][:MAX_RANK_SERIES])
    series: list[Series] = []
    for index, rank in enumerate(alone):
        points = sorted(points_by_rank[rank], key=lambda p: p.t)
        name = _rank_name(rank, points[0].host)
        series.append(_line(name, points, RANK_COLORS[index % len(RANK_COLORS)],
                            f"{key}r{rank}"))
    rest = [r for r in ranks if r not in alone]
    how = ""
    if rest:
        by_time: dict[float, list[_Point]] = defaultdict(list)
        for rank in rest:
            for point in points_by_rank[rank]:
                by_time[point.t].append(point)
        medians = [_Point(t, statistics.median(p.value for p in ps), -1, "", False,
                          f"median of {len(ps)} ranks\n{t:.1f} s: "
                          f"{format_number(statistics.median(p.value for p in ps))} {unit}")
                   for t, ps in sorted(by_time.items())]
        highest = [max(ps, key=lambda p: p.value) for _, ps in sorted(by_time.items())]
        series.append(_line(f"median of the other {len(rest)} ranks", medians, MEDIAN_COLOR,
                            f"{key}median", dashed=True))
        series.append(_line(f"highest of the other {len(rest)} ranks", highest,
                            HIGHEST_COLOR, f"{key}highest", dashed=True))
        skipped = len(set(picked) & set(rest))
        how = (f"{len(ranks)} ranks: " + (
            f"{len(alone)} drawn one by one (flagged or blamed"
            + (f"; {skipped} more not drawn alone, nor their flagged windows" if skipped else "")
            + f"), the other {len(rest)}" if alone else "none flagged or blamed, all")
            + " as their median and highest per round (over "
            f"{MAX_RANK_SERIES} ranks, a line each would hide the one that matters).")
    for rank in alone:
        stretch: list[_Point] = []
        for p in [*sorted(points_by_rank[rank], key=lambda p: p.t), None]:
            if p is not None and p.flagged:
                stretch.append(p)
                continue
            if stretch:
                name = (f"{_rank_name(rank, stretch[0].host)} flagged "
                        f"{stretch[0].t:.1f}–{stretch[-1].t:.1f} s")
                series.append(_line(name, stretch, FLAGGED_COLOR,
                                    f"{key}f{rank}_{stretch[0].t:.1f}", marker="square"))
                stretch = []
    return series, how


def _line(name: str, points: list[_Point], color: str, key: str, dashed: bool = False,
          marker: str = "circle") -> Series:
    tips = {(p.t, p.value): p.tip for p in points}
    kept = decimate([(p.t, p.value) for p in points], MAX_POINTS)
    return Series(name, kept, color, dashed=dashed, marker=marker, key=slug(key),
                  tips=[tips[xy] for xy in kept])


def full_windows(run: Run) -> tuple[list[WatchWindowRecord], list[WatchWindowRecord]]:
    """(the windows drawn, the partial ones left out). A window is partial while its group has
    matched fewer collectives than its windows hold later (the job's first rounds): its
    median is over 1 to 11 collectives, at start-up the skew of init's broadcasts (a second and
    more on a loaded host), which watch's test never judges and which would flatten the scale
    that a 30 ms straggler is read on."""
    sizes: dict[str, int] = {}
    for w in windows(run):
        sizes[w.group] = max(sizes.get(w.group, 0), w.window)
    kept: list[WatchWindowRecord] = []
    partial: list[WatchWindowRecord] = []
    for w in windows(run):
        full = w.window >= sizes.get(w.group, 0)
        (kept if full else partial).append(w)
    return kept, partial


def lateness_charts(run: Run) -> list[LineChart]:
    """Per process group: each rank's window lateness (ms) against seconds since the run's
    first window, the straggler episodes in red."""
    start = _start(run)
    if start is None:
        return []
    kept, partial = full_windows(run)
    by_group: dict[str, dict[int, list[_Point]]] = defaultdict(lambda: defaultdict(list))
    for w in kept:
        t = float(w.time) - start
        rank, host, lateness = w.rank, str(w.host), float(w.lateness_ms)
        wait, last, of = (as_number(w.wait_caused_ms), w.arrived_last,
                          w.window)
        tip = (f"{_rank_name(rank, host)}, group {w.group}\n{t:.1f} s: lateness "
               f"{format_number(lateness)} ms (median of {of} collectives), entered last "
               f"{last}/{of}" + (f", made the others wait {format_number(wait)} ms"
                                 if wait is not None else "")
               + ("\nflagged: straggler" if w.straggler is True else ""))
        by_group[str(w.group)][rank].append(
            _Point(t, lateness, rank, host, w.straggler is True, tip))
    found = episodes(run)
    job = _job(run)
    clocks = str((job.clock if job else {}).get("reason") or "not recorded")
    stalled = bool(run.of(StallRecord))
    charts = []
    for group, points_by_rank in sorted(by_group.items()):
        # Most flagged windows first, then the ranks of episodes without a flagged window drawn
        flags = {r: sum(p.flagged for p in ps) for r, ps in points_by_rank.items()}
        picked = sorted((r for r in flags if flags[r]), key=lambda r: (-flags[r], r))
        picked += [e.rank for e in found if e.group == group]
        series, how = _series(points_by_rank, picked, "ms", f"g{group}")
        ours = [e for e in found if e.group == group]
        left_out = [w for w in partial if str(w.group) == group]
        said = [how, "Each point: one aggregation round, the rank's median over the window's "
                "matched collectives of its enqueue time minus the first rank's (clocks: "
                f"{clocks})."]
        if any(flags.values()):
            said.append("Red: the windows in which watch flagged the rank a straggler.")
        if left_out:
            said.append(
                f"Not drawn: the first {len({w.time for w in left_out})} round(s), whose "
                "windows held fewer collectives than the rest (start-up, not judged by the "
                "test; up to "
                f"{format_number(max(float(w.lateness_ms) for w in left_out))} ms).")
        said.append(f"Episodes: {'; '.join(_episode_text(e, start) for e in ours)}." if ours
                    else "No straggler named in this group.")
        if stalled:
            said.append("On a stall the rank that never entered the collective is late in no "
                        "matched one: the run's pending chart shows the others' waits climbing "
                        "while it has nothing pending.")
        charts.append(LineChart(
            f"watch_lateness_{slug(run.label)}_{slug(group)}",
            f"{run.label}: lateness per rank, group {group}",
            "seconds since the first window", "lateness (ms, window median)", series,
            x_log=False, y_log=False, x_format="number",
            note=" ".join(part for part in said if part)))
    return charts


def _stall(run: Run) -> StallRecord | None:
    return next(iter(run.of(StallRecord)), None)


def _culprits(run: Run) -> list[int]:
    """The ranks `collscope hang`'s verdict (recorded by watch on the stall) blames."""
    verdict = next(iter(run.of(HangVerdictRecord)), None)
    return sorted(verdict.culprit_ranks) if verdict else []


def pending_chart(run: Run) -> LineChart | None:
    """On a stall: each rank's oldest pending collective (s) over time, what --hang-after is
    measured on (0: nothing pending; the rank that never entered stays low)."""
    stall, start = _stall(run), _start(run)
    if stall is None or start is None:
        return None
    seen: set[tuple[float, int]] = set()
    points_by_rank: dict[int, list[_Point]] = defaultdict(list)
    for w in windows(run):
        t, rank = float(w.time) - start, w.rank
        if (t, rank) in seen:
            continue                  # one value per rank per round (the same in every group)
        seen.add((t, rank))
        age = as_number(w.oldest_pending_s) or 0.0
        host = str(w.host)
        points_by_rank[rank].append(_Point(
            t, age, rank, host, False,
            f"{_rank_name(rank, host)}\n{t:.1f} s: oldest pending collective {age:.1f} s"))
    culprits = _culprits(run)
    picked = culprits + ([stall.detected_by] if isinstance(stall.detected_by, int)
                         else [])
    series, how = _series(points_by_rank, picked, "s", "pending")
    blamed = (f" collscope hang blames rank(s) {', '.join(map(str, culprits))}." if culprits
              else "")
    return LineChart(
        f"watch_pending_{slug(run.label)}", f"{run.label}: oldest pending collective per rank",
        "seconds since the first window", "age (s)", series, x_log=False, y_log=False,
        x_format="number",
        note=" ".join(part for part in (
            how, "Each point: the age of the rank's oldest collective not yet completed, as its "
            f"agent last reported it (0: none pending). Stall: {_stall_text(stall, start)}."
            + blamed) if part))


def watch_charts(inputs: list[Input]) -> list[LineChart]:
    charts: list[LineChart] = []
    for source in inputs:
        for run in source.runs:
            charts += lateness_charts(run)
            pending = pending_chart(run)
            if pending is not None:
                charts.append(pending)
    return charts


def _job(run: Run) -> WatchJobRecord | None:
    return next(iter(run.of(WatchJobRecord)), None)


def _clock(epoch: Any) -> str:
    value = as_number(epoch)
    return time.strftime("%H:%M:%S UTC", time.gmtime(value)) if value is not None else "?"


def _since(epoch: Any, start: float) -> str:
    value = as_number(epoch)
    return f"{value - start:+.1f} s" if value is not None else "?"


def _episode_text(episode: Episode, start: float) -> str:
    s, e = episode.started, episode.ended
    end = (f"ended {_since(e.time, start)}" if e is not None
           else "still flagged at the file's end")
    return (f"{_rank_name(episode.rank, episode.host)} late since {_since(s.since, start)}"
            f", named {_since(s.time, start)}, {end}")


def _p(value: Any) -> str:
    number = as_number(value)
    return f"{number:.2g}" if number is not None else "?"


def _episode_detail(episode: Episode, start: float) -> str:
    s = episode.started
    ms = {"lateness_ms": s.lateness_ms, "baseline_ms": s.baseline_ms,
          "wait_caused_ms": s.wait_caused_ms}
    numbers = ", ".join(f"{name} {format_number(v)} ms" for name, v in (
        ("median lateness", ms["lateness_ms"]), ("baseline", ms["baseline_ms"]),
        ("made the others wait", ms["wait_caused_ms"])) if v is not None)
    ended = episode.ended
    end = (f"ended {_since(ended.time, start)} ({_clock(ended.time)})"
           if ended is not None else "still flagged at the file's end")
    ranks = s.ranks
    who = (f"{s.shape or 'group'} of ranks {', '.join(map(str, ranks))}" if len(ranks) > 1
           else _rank_name(episode.rank, episode.host))
    shape = f" ({s.shape})" if s.shape is not None and len(ranks) <= 1 else ""
    groups = s.groups or [str(episode.group)]
    return (f"{who}{shape} in group(s) {', '.join(groups)}: late since "
            f"{_since(s.since, start)} ({_clock(s.since)}), named "
            f"{_since(s.time, start)}, {end}; {numbers}"
            + (f"; cost {format_number(s.cost_pct)} % of the job's time" if s.cost_pct else "")
            + (f"; delays rank(s) {', '.join(map(str, s.followers))}" if s.followers else "")
            + (f"; layout {s.layout}" if s.layout else "")
            + f"; late in {s.arrived_last}/{s.window}; binomial "
            f"p={_p(s.p_last)} (Bonferroni x ranks), Mann-Whitney p={_p(s.p_rise)}")


def _stall_text(stall: StallRecord, start: float) -> str:
    pending = as_number(stall.pending_s)
    silent = stall.no_answer
    return (f"rank {stall.detected_by}'s {stall.collective} #{stall.seq} "
            f"of group {stall.group} pending "
            + (f"{pending:.1f} s" if pending is not None else "?")
            + f" at {_since(stall.time, start)}"
            + (f"; no answer from rank(s) {', '.join(map(str, silent))}" if silent else ""))


def _highest(kept: list[WatchWindowRecord], start: float) -> str:
    """The largest window lateness of the judged windows: how close a healthy job came."""
    top = max(kept, key=lambda w: float(w.lateness_ms))
    return (f"highest window lateness {format_number(float(top.lateness_ms))} ms: "
            f"{_rank_name(top.rank, str(top.host))} in group {top.group} "
            f"at {_since(top.time, start)}")


def _busbw_details(run: Run, backend: str) -> list[str]:
    """Per group and collective, the lowest rank's busbw (each rank's median over the windows
    that carried one) against the ranks' median; for an NCCL job without any, how to get them
    (gloo records no durations: nothing said)."""
    values: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    hosts: dict[int, str] = {}
    for w in windows(run):
        for op, value in (w.busbw_gbs or {}).items():
            number = as_number(value)
            if number is not None and number > 0 and isinstance(w.rank, int):
                values[(str(w.group), str(op))][w.rank].append(number)
                hosts[w.rank] = str(w.host)
    if not values:
        return ([f"busbw: not known: no window carried a Flight Recorder duration (backend "
                 f"{backend}: set TORCH_NCCL_ENABLE_TIMING=1 in the job)"]
                if "nccl" in backend else [])
    parts = []
    for (group, op), by_rank in sorted(values.items()):
        medians = {rank: statistics.median(v) for rank, v in by_rank.items()}
        low = min(medians, key=lambda r: (medians[r], r))
        parts.append(f"group {group} {op}: lowest {_rank_name(low, hosts[low])} "
                     f"{format_number(medians[low])} GB/s, median of {len(medians)} ranks "
                     f"{format_number(statistics.median(medians.values()))} GB/s")
    return [f"busbw (each rank's median over its windows): {'; '.join(parts)} ({BUSBW_METHOD})"]


def _method(episode: Episode) -> str:
    """The test as watch recorded it, without the p-values the episode line already says
    (its text is "binomial p=..., Mann-Whitney p=...; <method>")."""
    test = episode.started.test
    return test.split("; ", 1)[1] if test.startswith("binomial p=") and "; " in test else test


def watch_headline(run: Run) -> Headline | None:
    """What watch found: a stall and hang's verdict (fail), the straggler episodes (warn), or
    nobody named over the windows it judged (pass); the job and the method in the details."""
    if not run.watch:
        return None
    job = _job(run)
    rounds = sorted({float(w.time) for w in windows(run)})
    start = rounds[0] if rounds else job.time if job else 0.0
    details = []
    if job:
        hosts = job.hosts
        shown = ", ".join(hosts[:8]) + (f" and {len(hosts) - 8} more" if len(hosts) > 8 else "")
        clock = job.clock.get("reason") or "not recorded"
        details.append(f"job: {job.world_size} ranks on {len(hosts)} host(s) ({shown}), "
                       f"backend {job.backend or '?'}; clocks: {clock}")
    found = episodes(run)
    details += [_episode_detail(e, start) for e in found]
    if found and _method(found[0]):
        details.append(f"test: {_method(found[0])}")
    ranks = len({w.rank for w in windows(run)})
    kept, _ = full_windows(run)
    if rounds:
        details.append(f"{len(rounds)} rounds of windows from {ranks} ranks over "
                       f"{rounds[-1] - rounds[0]:.1f} s (first at {_clock(rounds[0])}); "
                       + _highest(kept, start))
    details += _busbw_details(run, job.backend if job else "")
    details += [r.title for r in run.of(NoticeRecord)]
    costs = run.of(AgentCostRecord)
    if costs:
        details.append(cost_line([c.to_dict() for c in costs]))
    stall = _stall(run)
    if stall is not None:
        verdict = next(iter(run.of(HangVerdictRecord)), None)
        if verdict is not None:
            details.insert(0, f"hang verdict: {verdict.headline}")
        culprits = _culprits(run)
        blamed = (f"; collscope hang blames rank(s) {', '.join(map(str, culprits))}"
                  if culprits else "")
        return Headline(f"{run.label}: STALL: {_stall_text(stall, start)}{blamed}", "fail",
                        details)
    if found:
        named = "; ".join(_episode_headline(e, start) for e in found)
        return Headline(f"{run.label}: straggler(s) named: {named}", "warn", details)
    if not rounds:
        return Headline(f"{run.label}: no window: no collective was matched across the ranks",
                        "info", details)
    return Headline(f"{run.label}: no straggler named over {len(rounds)} windows of {ranks} "
                    f"ranks ({rounds[-1] - rounds[0]:.0f} s)", "pass", details)


def _episode_headline(episode: Episode, start: float) -> str:
    s, e = episode.started, episode.ended
    late, base = as_number(s.lateness_ms), as_number(s.baseline_ms)
    by = (f", {format_number(late)} ms late (was {format_number(base)} ms)"
          if late is not None and base is not None else "")
    until = f" to {_since(e.time, start)}" if e is not None else " (still flagged)"
    return (f"{_rank_name(episode.rank, episode.host)} in group {episode.group}{by}, from "
            f"{_since(s.time, start)}{until}")
