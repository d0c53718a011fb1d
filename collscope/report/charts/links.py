"""`collscope links` records as heat maps: GB/s between nodes, and between ranks inside each
node."""

from __future__ import annotations

from typing import Any

from collscope.records.load import Input
from collscope.report.charts.spec import HeatMap, as_number, slug


def link_heat_maps(inputs: list[Input]) -> list[HeatMap]:
    """`collscope links` runs as GB/s matrices (sender rows, receiver columns): one across
    nodes by host, one per node inside it by rank; slow links are the dark cells."""
    charts = []
    for source in inputs:
        for run in source.runs:
            links = [r for r in run.links if r.get("kind") == "link"
                     and as_number(r.get("gbs")) is not None
                     and all(isinstance(r.get(f"{end}_{what}"), (str, int))
                             for end in ("src", "dst") for what in ("host", "rank"))]
            slow = [str(r.get("host")) for r in run.links if r.get("kind") == "node"
                    and r.get("verdict") == "slow"]
            slow_gpus = {str(r.get("host")): r.get("slow_ranks") for r in run.links
                         if r.get("kind") == "node" and r.get("slow_ranks")}
            # The summary record holds the thresholds (files of collscope 0.1: the run record)
            summary = next((r for r in run.links if r.get("kind") == "links_summary"), {})
            extra = run.context.get("extra")
            thresholds = summary.get("thresholds") or (
                extra.get("thresholds") if isinstance(extra, dict) else None)
            limits = "; ".join(f"{t.get('scope', '')} limit {t['limit_gbs']:.4g} GB/s"
                               for t in (thresholds if isinstance(thresholds, list) else [])
                               if isinstance(t, dict) and as_number(t.get("limit_gbs")) is not None)
            groups: dict[str, list[dict[str, Any]]] = {}
            for link in links:
                key = "across nodes" if link.get("scope") == "inter" \
                    else f"inside {link.get('src_host')}"
                groups.setdefault(key, []).append(link)
            for key, group in groups.items():
                across = key == "across nodes"
                name = (lambda r, end: str(r[f"{end}_host"])) if across else \
                    (lambda r, end: str(r[f"{end}_rank"]))
                labels = sorted({name(r, "src") for r in group} | {name(r, "dst") for r in group},
                                key=lambda x: (len(x), x))
                cell = {(name(r, "src"), name(r, "dst")): float(r["gbs"]) for r in group}
                host = str(group[0].get("src_host"))
                note = f"slow node(s): {', '.join(slow)}. " if across and slow else \
                    f"slow GPU rank(s): {slow_gpus[host]}. " if not across and \
                    host in slow_gpus else ""
                charts.append(HeatMap(
                    id=f"links-{slug(run.label)}-{slug(key)}",
                    title=f"{run.label}: link bandwidth {key} (GB/s)",
                    row_label="src host" if across else "src rank",
                    col_label="dst host" if across else "dst rank", rows=labels, cols=labels,
                    values=[[cell.get((a, b)) for b in labels] for a in labels], unit="GB/s",
                    bad="low", note=note + "Median receive time per direction, GB/s = size / "
                                           "time. " + (limits + "." if limits else "")))
    return charts
