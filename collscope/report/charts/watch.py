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

from collscope.records.load import Input, Run
from collscope.records.watch import STRAGGLER_ID
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

    started: dict[str, Any]
    ended: dict[str, Any] | None

    @property
    def rank(self) -> int:
        return int(self.started["rank"])

    @property
    def group(self) -> str:
        return str(self.started.get("group"))

    @property
    def host(self) -> str:
        return str(self.started.get("host", "?"))


@dataclass
class _Point:
    t: float                          # seconds since the run's first window
    value: float
    rank: int
    host: str
    flagged: bool
    tip: str


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def windows(run: Run) -> list[dict[str, Any]]:
    return [r for r in run.watch if r.get("kind") == "watch_window"]


def episodes(run: Run) -> list[Episode]:
    """The straggler findings paired per (group, rank) in file order: each ``started`` with
    the next ``ended`` of the same rank and group."""
    out: list[Episode] = []
    open_: dict[tuple[str, int], Episode] = {}
    for record in run.watch:
        if record.get("kind") != "finding" or record.get("id") != STRAGGLER_ID or \
                not isinstance(record.get("rank"), int):
            continue
        key = (str(record.get("group")), record["rank"])
        if record.get("state") == "started":
            open_[key] = Episode(record, None)
            out.append(open_[key])
        elif record.get("state") == "ended" and key in open_:
            open_.pop(key).ended = record
    return out


def _start(run: Run) -> float | None:
    """The time of the run's first window: every chart and headline of the run counts from it."""
    times = [float(w["time"]) for w in windows(run)]
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


def full_windows(run: Run) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the windows drawn, the partial ones left out). A window is partial while its group has
    matched fewer collectives than its windows hold later (the job's first rounds): its
    median is over 1 to 11 collectives, at start-up the skew of init's broadcasts (a second and
    more on a loaded host), which watch's test never judges and which would flatten the scale
    that a 30 ms straggler is read on."""
    sizes: dict[str, int] = {}
    for w in windows(run):
        if isinstance(w.get("window"), int):
            group = str(w.get("group"))
            sizes[group] = max(sizes.get(group, 0), w["window"])
    kept: list[dict[str, Any]] = []
    partial: list[dict[str, Any]] = []
    for w in windows(run):
        size = w.get("window")
        full = not isinstance(size, int) or size >= sizes.get(str(w.get("group")), 0)
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
        t = float(w["time"]) - start
        rank, host, lateness = w["rank"], str(w.get("host", "?")), float(w["lateness_ms"])
        wait, last, of = (as_number(w.get("wait_caused_ms")), w.get("arrived_last"),
                          w.get("window"))
        tip = (f"{_rank_name(rank, host)}, group {w.get('group')}\n{t:.1f} s: lateness "
               f"{format_number(lateness)} ms (median of {of} collectives), entered last "
               f"{last}/{of}" + (f", made the others wait {format_number(wait)} ms"
                                 if wait is not None else "")
               + ("\nflagged: straggler" if w.get("straggler") is True else ""))
        by_group[str(w.get("group"))][rank].append(
            _Point(t, lateness, rank, host, w.get("straggler") is True, tip))
    found = episodes(run)
    clocks = str(_dict(_job(run).get("clock")).get("reason") or "not recorded")
    stalled = any(r.get("kind") == "watch_stall" for r in run.watch)
    charts = []
    for group, points_by_rank in sorted(by_group.items()):
        # Most flagged windows first, then the ranks of episodes without a flagged window drawn
        flags = {r: sum(p.flagged for p in ps) for r, ps in points_by_rank.items()}
        picked = sorted((r for r in flags if flags[r]), key=lambda r: (-flags[r], r))
        picked += [e.rank for e in found if e.group == group]
        series, how = _series(points_by_rank, picked, "ms", f"g{group}")
        ours = [e for e in found if e.group == group]
        left_out = [w for w in partial if str(w.get("group")) == group]
        said = [how, "Each point: one aggregation round, the rank's median over the window's "
                "matched collectives of its enqueue time minus the first rank's (clocks: "
                f"{clocks})."]
        if any(flags.values()):
            said.append("Red: the windows in which watch flagged the rank a straggler.")
        if left_out:
            said.append(
                f"Not drawn: the first {len({w['time'] for w in left_out})} round(s), whose "
                "windows held fewer collectives than the rest (start-up, not judged by the "
                "test; up to "
                f"{format_number(max(float(w['lateness_ms']) for w in left_out))} ms).")
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


def _stall(run: Run) -> dict[str, Any] | None:
    return next((r for r in run.watch if r.get("kind") == "watch_stall"), None)


def _culprits(run: Run) -> list[int]:
    """The ranks `collscope hang`'s verdict (recorded by watch on the stall) blames."""
    verdict = next((r for r in run.hang if r.get("kind") == "hang_verdict"), {})
    return sorted(r for r in _list(verdict.get("culprit_ranks")) if isinstance(r, int))


def pending_chart(run: Run) -> LineChart | None:
    """On a stall: each rank's oldest pending collective (s) over time, what --hang-after is
    measured on (0: nothing pending; the rank that never entered stays low)."""
    stall, start = _stall(run), _start(run)
    if stall is None or start is None:
        return None
    seen: set[tuple[float, int]] = set()
    points_by_rank: dict[int, list[_Point]] = defaultdict(list)
    for w in windows(run):
        t, rank = float(w["time"]) - start, w["rank"]
        if (t, rank) in seen:
            continue                  # one value per rank per round (the same in every group)
        seen.add((t, rank))
        age = as_number(w.get("oldest_pending_s")) or 0.0
        host = str(w.get("host", "?"))
        points_by_rank[rank].append(_Point(
            t, age, rank, host, False,
            f"{_rank_name(rank, host)}\n{t:.1f} s: oldest pending collective {age:.1f} s"))
    culprits = _culprits(run)
    picked = culprits + ([stall["detected_by"]] if isinstance(stall.get("detected_by"), int)
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


def _job(run: Run) -> dict[str, Any]:
    return next((r for r in run.watch if r.get("kind") == "watch_job"), {})


def _clock(epoch: Any) -> str:
    value = as_number(epoch)
    return time.strftime("%H:%M:%S UTC", time.gmtime(value)) if value is not None else "?"


def _since(epoch: Any, start: float) -> str:
    value = as_number(epoch)
    return f"{value - start:+.1f} s" if value is not None else "?"


def _episode_text(episode: Episode, start: float) -> str:
    s, e = episode.started, episode.ended
    end = (f"ended {_since(e.get('time'), start)}" if e is not None
           else "still flagged at the file's end")
    return (f"{_rank_name(episode.rank, episode.host)} late since {_since(s.get('since'), start)}"
            f", named {_since(s.get('time'), start)}, {end}")


def _p(value: Any) -> str:
    number = as_number(value)
    return f"{number:.2g}" if number is not None else "?"


def _episode_detail(episode: Episode, start: float) -> str:
    s = episode.started
    ms = {k: as_number(s.get(k)) for k in ("lateness_ms", "baseline_ms", "wait_caused_ms")}
    numbers = ", ".join(f"{name} {format_number(v)} ms" for name, v in (
        ("median lateness", ms["lateness_ms"]), ("baseline", ms["baseline_ms"]),
        ("made the others wait", ms["wait_caused_ms"])) if v is not None)
    ended = episode.ended
    end = (f"ended {_since(ended.get('time'), start)} ({_clock(ended.get('time'))})"
           if ended is not None else "still flagged at the file's end")
    ranks = [r for r in _list(s.get("ranks")) if isinstance(r, int)]
    who = (f"{s.get('shape', 'group')} of ranks {', '.join(map(str, ranks))}" if len(ranks) > 1
           else _rank_name(episode.rank, episode.host))
    shape = f" ({s['shape']})" if isinstance(s.get("shape"), str) and len(ranks) <= 1 else ""
    groups = [str(g) for g in _list(s.get("groups"))] or [str(episode.group)]
    cost = as_number(s.get("cost_pct"))
    followers = [r for r in _list(s.get("followers")) if isinstance(r, int)]
    return (f"{who}{shape} in group(s) {', '.join(groups)}: late since "
            f"{_since(s.get('since'), start)} ({_clock(s.get('since'))}), named "
            f"{_since(s.get('time'), start)}, {end}; {numbers}"
            + (f"; cost {format_number(cost)} % of the job's time" if cost else "")
            + (f"; delays rank(s) {', '.join(map(str, followers))}" if followers else "")
            + (f"; layout {s['layout']}" if isinstance(s.get("layout"), str) and s["layout"]
               else "")
            + f"; late in {s.get('arrived_last')}/{s.get('window')}; binomial "
            f"p={_p(s.get('p_last'))} (Bonferroni x ranks), Mann-Whitney p={_p(s.get('p_rise'))}")


def _stall_text(stall: dict[str, Any], start: float) -> str:
    pending = as_number(stall.get("pending_s"))
    silent = [r for r in _list(stall.get("no_answer")) if isinstance(r, int)]
    return (f"rank {stall.get('detected_by')}'s {stall.get('collective')} #{stall.get('seq')} "
            f"of group {stall.get('group')} pending "
            + (f"{pending:.1f} s" if pending is not None else "?")
            + f" at {_since(stall.get('time'), start)}"
            + (f"; no answer from rank(s) {', '.join(map(str, silent))}" if silent else ""))


def _highest(kept: list[dict[str, Any]], start: float) -> str:
    """The largest window lateness of the judged windows: how close a healthy job came."""
    top = max(kept, key=lambda w: float(w["lateness_ms"]))
    return (f"highest window lateness {format_number(float(top['lateness_ms']))} ms: "
            f"{_rank_name(top['rank'], str(top.get('host', '?')))} in group {top.get('group')} "
            f"at {_since(top['time'], start)}")


def _busbw_details(run: Run, backend: str) -> list[str]:
    """Per group and collective, the lowest rank's busbw (each rank's median over the windows
    that carried one) against the ranks' median; for an NCCL job without any, how to get them
    (gloo records no durations: nothing said)."""
    values: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    hosts: dict[int, str] = {}
    for w in windows(run):
        for op, value in _dict(w.get("busbw_gbs")).items():
            number = as_number(value)
            if number is not None and number > 0 and isinstance(w.get("rank"), int):
                values[(str(w.get("group")), str(op))][w["rank"]].append(number)
                hosts[w["rank"]] = str(w.get("host", "?"))
    if not values:
        return ([f"busbw: not known: no window carried a Flight Recorder duration (backend "
                 f"{backend}: set TORCH_NCCL_ENABLE_TIMING=1 in the job)"]
                if "nccl" in backend else [])
    from collscope.watch.bandwidth import METHOD

    parts = []
    for (group, op), by_rank in sorted(values.items()):
        medians = {rank: statistics.median(v) for rank, v in by_rank.items()}
        low = min(medians, key=lambda r: (medians[r], r))
        parts.append(f"group {group} {op}: lowest {_rank_name(low, hosts[low])} "
                     f"{format_number(medians[low])} GB/s, median of {len(medians)} ranks "
                     f"{format_number(statistics.median(medians.values()))} GB/s")
    return [f"busbw (each rank's median over its windows): {'; '.join(parts)} ({METHOD})"]


def _method(episode: Episode) -> str:
    """The test as watch recorded it, without the p-values the episode line already says
    (its text is "binomial p=..., Mann-Whitney p=...; <method>")."""
    test = str(episode.started.get("test") or "")
    return test.split("; ", 1)[1] if test.startswith("binomial p=") and "; " in test else test


def watch_headline(run: Run) -> Headline | None:
    """What watch found: a stall and hang's verdict (fail), the straggler episodes (warn), or
    nobody named over the windows it judged (pass); the job and the method in the details."""
    if not run.watch:
        return None
    job = _job(run)
    rounds = sorted({float(w["time"]) for w in windows(run)})
    start = rounds[0] if rounds else as_number(job.get("time")) or 0.0
    details = []
    if job:
        hosts = [str(h) for h in _list(job.get("hosts"))]
        shown = ", ".join(hosts[:8]) + (f" and {len(hosts) - 8} more" if len(hosts) > 8 else "")
        clock = _dict(job.get("clock")).get("reason") or "not recorded"
        details.append(f"job: {job.get('world_size')} ranks on {len(hosts)} host(s) ({shown}), "
                       f"backend {job.get('backend') or '?'}; clocks: {clock}")
    found = episodes(run)
    details += [_episode_detail(e, start) for e in found]
    if found and _method(found[0]):
        details.append(f"test: {_method(found[0])}")
    ranks = len({w["rank"] for w in windows(run)})
    kept, _ = full_windows(run)
    if rounds:
        details.append(f"{len(rounds)} rounds of windows from {ranks} ranks over "
                       f"{rounds[-1] - rounds[0]:.1f} s (first at {_clock(rounds[0])}); "
                       + _highest(kept, start))
    details += _busbw_details(run, str(job.get("backend") or ""))
    details += [str(r["title"]) for r in run.watch
                if r.get("kind") == "watch_notice" and isinstance(r.get("title"), str)]
    costs = [r for r in run.watch if r.get("kind") == "watch_agent"
             and as_number(r.get("cpu_share")) is not None]
    if costs:
        from collscope.watch.sinks import cost_line

        details.append(cost_line(costs))
    stall = _stall(run)
    if stall is not None:
        verdict = next((r for r in run.hang if r.get("kind") == "hang_verdict"), {})
        if isinstance(verdict.get("headline"), str):
            details.insert(0, f"hang verdict: {verdict['headline']}")
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
    late, base = as_number(s.get("lateness_ms")), as_number(s.get("baseline_ms"))
    by = (f", {format_number(late)} ms late (was {format_number(base)} ms)"
          if late is not None and base is not None else "")
    until = f" to {_since(e.get('time'), start)}" if e is not None else " (still flagged)"
    return (f"{_rank_name(episode.rank, episode.host)} in group {episode.group}{by}, from "
            f"{_since(s.get('time'), start)}{until}")
