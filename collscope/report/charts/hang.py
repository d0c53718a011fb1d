"""`collscope hang` records as a heat map: process groups x ranks, where each rank stopped."""

from __future__ import annotations

from typing import Any

from collscope.records.load import Input
from collscope.report.charts.spec import HeatMap, as_number, slug


def _lag(channel: dict[str, Any]) -> dict[int, float]:
    """Per member rank: calls behind the member that issued the most on this channel (0: it
    is furthest; None left out: no dump)."""
    issued = {int(m["rank"]): as_number(m.get("issued")) for m in channel.get("members", [])
              if isinstance(m, dict) and isinstance(m.get("rank"), int)}
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
            groups = [r for r in run.hang if r.get("kind") == "hang_group"]
            verdict = next((r for r in run.hang if r.get("kind") == "hang_verdict"), {})
            rows, cells = [], []
            ranks: set[int] = set()
            for group in groups:
                for channel in group.get("channels", []):
                    if not isinstance(channel, dict) or not channel.get("stuck"):
                        continue
                    lag = _lag(channel)
                    ranks |= set(lag)
                    label = f"{group.get('group')} " + (
                        str(group.get("desc") or "") if channel.get("channel") == "collectives"
                        else str(channel.get("channel")))
                    rows.append(label)
                    cells.append(lag)
            if not rows:
                continue
            cols = sorted(ranks)
            culprits = verdict.get("culprit_ranks") or []
            charts.append(HeatMap(
                id=f"hang-{slug(run.label)}", title=f"{run.label}: where each rank stopped",
                row_label="group", col_label="rank", rows=rows, cols=[str(c) for c in cols],
                values=[[lag.get(c) for c in cols] for lag in cells], unit="calls behind",
                bad="high", note=f"{verdict.get('headline', '')} Cell: calls the rank issued "
                                 "fewer than the group's furthest member (collective_seq_id, "
                                 "p2p_seq_id); blank: no dump or not a member. Culprits: "
                                 f"{', '.join(map(str, culprits)) or 'none'}."))
    return charts
