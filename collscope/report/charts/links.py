"""`collscope links` records as heat maps (GB/s between nodes, and between ranks inside each
node) coloured against the verdict's thresholds, and the verdict itself in words."""

from __future__ import annotations

from typing import Any

from collscope.records.links import LinkRecord, LinksSummaryRecord, NodeRecord
from collscope.records.load import Input, Run
from collscope.report.charts.axes import format_number
from collscope.report.charts.spec import Headline, HeatMap, as_number, slug

FAILING = ("slow", "node", "gpu", "below-link-type")      # link verdicts that fail the gate


def _summary(run: Run) -> LinksSummaryRecord | None:
    return next(iter(run.of(LinksSummaryRecord)), None)


def _thresholds(run: Run) -> dict[str, dict[str, Any]]:
    """Scope -> threshold of the run (the summary record; files of collscope 0.1: the run
    record), only those with a usable limit."""
    summary = _summary(run)
    extra = run.context.get("extra")
    given = (summary.thresholds if summary else None) or (
        extra.get("thresholds") if isinstance(extra, dict) else None)
    return {str(t.get("scope", "")): t for t in (given if isinstance(given, list) else [])
            if isinstance(t, dict) and as_number(t.get("limit_gbs")) is not None}


def _threshold_words(limit: dict[str, Any]) -> str:
    """"across nodes: slow below 1.064 GB/s (70% of the median 1.52 GB/s over 12 links)"."""
    words = f"{limit.get('scope', '')}: slow below {format_number(limit['limit_gbs'])} GB/s"
    reference, fraction = as_number(limit.get("reference_gbs")), as_number(limit.get("fraction"))
    if reference is not None and fraction is not None:
        over = f" over {limit['links']} links" if isinstance(limit.get("links"), int) else ""
        words += f" ({fraction:.0%} of the median {format_number(reference)} GB/s{over})"
    return words


def links_headline(run: Run) -> Headline | None:
    """The run's verdict as links printed it: pass or fail, the slow nodes and GPUs, how many
    links fail, and the thresholds that decided."""
    links = run.of(LinkRecord)
    if not links:
        return None
    summary = _summary(run)
    nodes = run.of(NodeRecord)
    slow_nodes = [str(n.host) for n in nodes if n.verdict == "slow"]
    slow_gpus = [f"{n.host} rank(s) {', '.join(str(r) for r in n.slow_ranks)}"
                 for n in nodes if n.slow_ranks]
    failing = [r for r in links if r.verdict in FAILING]
    verdict = summary.verdict if summary else \
        ("fail" if failing or slow_nodes or slow_gpus else "pass")
    said = [f"slow node(s): {', '.join(slow_nodes)}" if slow_nodes else "",
            f"slow GPU(s): {'; '.join(slow_gpus)}" if slow_gpus else "",
            f"{len(failing)} of {len(links)} link directions below threshold"]
    return Headline(f"{run.label}: {str(verdict).upper()}: "
                    + "; ".join(part for part in said if part),
                    "fail" if verdict == "fail" else "pass",
                    [_threshold_words(t) for t in _thresholds(run).values()])


def link_heat_maps(inputs: list[Input]) -> list[HeatMap]:
    """`collscope links` runs as GB/s matrices (sender rows, receiver columns): one across
    nodes by host, one per node inside it by rank; red cells are below the verdict's
    threshold (the map's limit), healthy links stay blue however they spread."""
    charts = []
    for source in inputs:
        for run in source.runs:
            thresholds = _thresholds(run)
            groups: dict[str, list[LinkRecord]] = {}
            for link in run.of(LinkRecord):
                key = "across nodes" if link.scope == "inter" \
                    else f"inside {link.src_host}"
                groups.setdefault(key, []).append(link)
            for key, group in groups.items():
                across = key == "across nodes"
                name = (lambda r, end: str(getattr(r, f"{end}_host"))) if across else \
                    (lambda r, end: str(getattr(r, f"{end}_rank")))
                labels = sorted({name(r, "src") for r in group} | {name(r, "dst") for r in group},
                                key=lambda x: (len(x), x))
                cell = {(name(r, "src"), name(r, "dst")): float(r.gbs) for r in group}
                types = {str(r.link_type or "unknown") for r in group}
                scope = "across nodes" if across else \
                    f"inside nodes ({types.pop()})" if len(types) == 1 else ""
                limit = thresholds.get(scope)
                charts.append(HeatMap(
                    id=f"links-{slug(run.label)}-{slug(key)}",
                    title=f"{run.label}: link bandwidth {key} (GB/s)",
                    row_label="src host" if across else "src rank",
                    col_label="dst host" if across else "dst rank", rows=labels, cols=labels,
                    values=[[cell.get((a, b)) for b in labels] for a in labels], unit="GB/s",
                    bad="low", limit=float(limit["limit_gbs"]) if limit else None,
                    note="Median receive time per direction, GB/s = size / time. "
                         + (f"Threshold {_threshold_words(limit)}." if limit else
                            "No single threshold for these links: colours span their range.")))
    return charts
