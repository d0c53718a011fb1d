"""`collscope hang` records as a heat map: process groups x ranks, where each rank stopped."""

from __future__ import annotations

from collscope.records.hang import HangChannelRecord, HangGroupRecord, HangVerdictRecord
from collscope.records.load import Input, Run
from collscope.report.charts.spec import Headline, HeatMap, as_number, slug


def _lag(channel: HangChannelRecord) -> dict[int, float]:
    """Per member rank: calls behind the member that issued the most on this channel (0: it
    is furthest; None left out: no dump)."""
    issued = {m.rank: as_number(m.issued) for m in channel.members}
    known = [v for v in issued.values() if v is not None]
    top = max(known) if known else None
    return {r: top - v for r, v in issued.items() if v is not None and top is not None}


def hang_heat_maps(inputs: list[Input]) -> list[HeatMap]:
    """One map per `collscope hang` run: a row per stuck group channel, a column per rank,
    each cell how many calls that rank is behind the furthest member of the group (red: the
    rank holding the group); ranks without a dump are blank."""
    charts = []
    for source in inputs:
        for run in source.runs:
            groups = run.of(HangGroupRecord)
            verdict = next(iter(run.of(HangVerdictRecord)), None)
            rows, cells = [], []
            ranks: set[int] = set()
            for group in groups:
                for channel in group.channels:
                    if not channel.stuck:
                        continue
                    lag = _lag(channel)
                    ranks |= set(lag)
                    label = f"{group.group} " + (
                        str(group.desc or "") if channel.channel == "collectives"
                        else str(channel.channel))
                    rows.append(label)
                    cells.append(lag)
            if not rows:
                continue
            cols = sorted(ranks)
            culprits = verdict.culprit_ranks if verdict else []
            headline = verdict.headline if verdict else ""
            charts.append(HeatMap(
                id=f"hang-{slug(run.label)}", title=f"{run.label}: where each rank stopped",
                row_label="group", col_label="rank", rows=rows, cols=[str(c) for c in cols],
                values=[[lag.get(c) for c in cols] for lag in cells], unit="calls behind",
                bad="high", note=f"{headline} Cell: calls the rank issued "
                                 "fewer than the group's furthest member (collective_seq_id, "
                                 "p2p_seq_id); blank: no dump or not a member. Culprits: "
                                 f"{', '.join(map(str, culprits)) or 'none'}."))
    return charts


def hang_headline(run: Run) -> Headline | None:
    """The run's verdict as `collscope hang` printed it, with the next steps it gave."""
    verdict = next(iter(run.of(HangVerdictRecord)), None)
    if verdict is None:
        return None
    found = bool(verdict.culprit_ranks) or verdict.cause not in (None, "none")
    steps = verdict.next_steps
    return Headline(f"{run.label}: {verdict.headline}", "fail" if found else "pass", steps)
