"""Where the wrapper puts what the agents found: Prometheus text and the live line (pure
rendering; the HTTP server is monitor's exporter, the JSON writer records.jsonl's).

Series (labels rank, host, group; collective on the counter and on busbw):
  collscope_watch_collectives_total       collectives completed, per collective type
  collscope_watch_busbw_gbps              nccl-tests busbw (GB/s) of the rank's latest timed
                                          calls, per collective (only where FR has durations)
  collscope_watch_lateness_seconds        median enqueue lateness over the window
  collscope_watch_arrived_last            collectives of the window the rank entered last
  collscope_watch_wait_caused_seconds     what the others waited for it over the window
  collscope_watch_oldest_pending_seconds  age of its oldest collective not yet completed
  collscope_watch_straggler               1 while it is a straggler (finding watch.straggler)
"""

from __future__ import annotations

import threading
from typing import Any

from collscope.monitor.prometheus import escape_label, format_number

SERIES: dict[str, tuple[str, str]] = {
    "collscope_watch_collectives_total": (
        "counter", "Collectives completed on the rank, per process group and collective."),
    "collscope_watch_lateness_seconds": (
        "gauge", "Median over the window of the rank's enqueue time minus the first rank's "
                 "(clocks aligned across hosts)."),
    "collscope_watch_arrived_last": (
        "gauge", "Collectives of the window that the rank entered last."),
    "collscope_watch_wait_caused_seconds": (
        "gauge", "Time the other ranks waited for this rank over the window (summed)."),
    "collscope_watch_oldest_pending_seconds": (
        "gauge", "Age of the rank's oldest collective not yet completed (0: none pending)."),
    "collscope_watch_straggler": (
        "gauge", "1 while the rank is a straggler in the group (finding watch.straggler)."),
    "collscope_watch_busbw_gbps": (
        "gauge", "nccl-tests bus bandwidth in GB/s (1e9 B/s) of the rank's calls of the "
                 "collective with a Flight Recorder duration (TORCH_NCCL_ENABLE_TIMING=1), "
                 "over its latest interval that had any: sum of sizes / sum of durations x "
                 "the collective's factor."),
}


def _labels(**labels: Any) -> str:
    return ",".join(f'{k}="{escape_label(str(v))}"' for k, v in labels.items())


class Metrics:
    """The newest window record per (rank, group), and the newest busbw per (rank, group,
    collective) (a window of an interval without timed calls keeps the last one), rendered
    on each scrape."""

    def __init__(self) -> None:
        self._windows: dict[tuple[int, str], dict[str, Any]] = {}
        self._busbw: dict[tuple[int, str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()

    def update(self, window: dict[str, Any]) -> None:
        with self._lock:
            self._windows[(window["rank"], window["group"])] = window
            for op, value in (window.get("busbw_gbs") or {}).items():
                self._busbw[(window["rank"], window["group"], op)] = (window["host"], value)

    def busbw(self) -> list[tuple[int, str, str, str, float]]:
        """(rank, host, group, collective, GB/s), the newest of each."""
        with self._lock:
            return [(rank, host, group, op, value)
                    for (rank, group, op), (host, value) in sorted(self._busbw.items())]

    def render(self) -> str:
        with self._lock:
            windows = [self._windows[k] for k in sorted(self._windows)]
        lines: dict[str, list[str]] = {name: [] for name in SERIES}
        pending_seen: set[int] = set()
        for w in windows:
            who = {"rank": w["rank"], "host": w["host"], "group": w["group"]}
            for op, count in sorted(w["collectives_total"].items()):
                lines["collscope_watch_collectives_total"].append(
                    f"collscope_watch_collectives_total{{{_labels(**who, collective=op)}}} "
                    f"{count}")
            for name, value in (("lateness_seconds", w["lateness_ms"] / 1000),
                                ("arrived_last", w["arrived_last"]),
                                ("wait_caused_seconds", w["wait_caused_ms"] / 1000),
                                ("straggler", int(w["straggler"]))):
                lines[f"collscope_watch_{name}"].append(
                    f"collscope_watch_{name}{{{_labels(**who)}}} {format_number(value)}")
            if w["rank"] not in pending_seen:
                pending_seen.add(w["rank"])
                lines["collscope_watch_oldest_pending_seconds"].append(
                    f"collscope_watch_oldest_pending_seconds"
                    f"{{{_labels(rank=w['rank'], host=w['host'])}}} "
                    f"{format_number(w['oldest_pending_s'] or 0.0)}")
        for rank, host, group, op, value in self.busbw():
            lines["collscope_watch_busbw_gbps"].append(
                f"collscope_watch_busbw_gbps"
                f"{{{_labels(rank=rank, host=host, group=group, collective=op)}}} "
                f"{format_number(value)}")
        out: list[str] = []
        for name, (kind, help_text) in SERIES.items():
            if lines[name]:
                out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *lines[name]]
        return "\n".join(out) + "\n" if out else ""


def straggler_text(finding: dict[str, Any]) -> str:
    """A straggler finding in a few words, e.g. 'rank 2 (node1) persistent, 31.2 % of the
    job's time (binomial p=2.4e-07)' or 'pair of ranks 4, 5 (group 7), ...'."""
    ranks = finding.get("ranks") or [finding.get("rank")]
    who = (f"rank {ranks[0]} ({finding.get('host', '?')})" if len(ranks) == 1 else
           f"{finding.get('shape', 'group')} of ranks {', '.join(map(str, ranks))}"
           + (f" (group {finding['link']})" if finding.get("link") else ""))
    shape = finding.get("shape")
    text = who + (f" {shape}" if shape and len(ranks) == 1 else "")
    if finding.get("cost_pct"):
        text += f", {finding['cost_pct']:.1f} % of the job's time"
    if isinstance(finding.get("p_last"), (int, float)):
        text += f" (binomial p={finding['p_last']:.2g})"
    return text


def live_line(windows: list[dict[str, Any]], rate_per_s: float | None,
              stragglers: list[str],
              busbw: list[tuple[int, str, str, str, float]] | None = None) -> str:
    """e.g. 'watch: 4 ranks, 18.2 collectives/s, latest rank 2 (node1) +30.4 ms median,
    stragglers: rank 2 (node1) persistent, 31.2 % of the job's time (binomial p=2.4e-07)'
    (``straggler_text`` of each), then, where durations are known (``Metrics.busbw``), per
    collective the lowest rank's busbw: ', lowest busbw: all_reduce 182.4 GB/s rank 3
    (node1) group 0'."""
    ranks = sorted({w["rank"] for w in windows})
    text = f"watch: {len(ranks)} ranks"
    if rate_per_s is not None:
        text += f", {rate_per_s:.1f} collectives/s (rank 0)"
    if windows:
        worst = max(windows, key=lambda w: w["lateness_ms"])
        text += (f", latest rank {worst['rank']} ({worst['host']}) "
                 f"+{worst['lateness_ms']:.1f} ms median in group {worst['group']}")
    text += f", stragglers: {', '.join(stragglers) if stragglers else 'none'}"
    lowest: dict[str, tuple[int, str, str, str, float]] = {}
    for item in busbw or []:
        op = item[3]
        if op not in lowest or item[4] < lowest[op][4]:
            lowest[op] = item
    if lowest:
        text += ", lowest busbw: " + ", ".join(
            f"{op} {value:.1f} GB/s rank {rank} ({host}) group {group}"
            for op, (rank, host, group, _, value) in sorted(lowest.items()))
    return text
