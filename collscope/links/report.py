"""Rank 0's output of `collscope links`: the JSON Lines records (run, link, node) and the
matrices, node table, failing links and verdict on stdout (rich)."""

from __future__ import annotations

from typing import Any

from collscope.units import format_size


class LinksWriter:
    """Rank 0's --json file, written as the run goes: the run record first, one ``link_try``
    record per direction as each round ends (flushed, so a rank that dies or hangs later
    leaves every finished round on disk), then the judged ``link`` and ``node`` records and a
    ``links_summary`` record when every round has ended."""

    def __init__(self, path: str, session: Any, launcher: str, config: Any, started: float):
        from collscope.links.plan import ranks_by_node
        from collscope.links.run import phases_for
        from collscope.records.jsonl import JsonlWriter
        from collscope.records.run import RunRecord

        self.devices = session.layout.devices
        self.size_bytes = config.size_bytes
        self.failure: str | None = None      # a write that failed mid-run (disk full)
        self.out = JsonlWriter(path, "--json")
        phases = phases_for(config, ranks_by_node(self.devices))
        extra = {"config": dict(vars(config)),
                 "rounds": {p.scope: len(p.rounds) for p in phases}}
        self.out.write(RunRecord.for_session("links", session, launcher, TIMING, extra,
                                             started_at=started).to_dict())

    def _write(self, records: list[Any]) -> None:
        """Write records; a failure is kept for the end of the run (rank 0 must go on: the
        other ranks wait for it in the next round), and the file is written no further."""
        from collscope.errors import OutputError

        try:
            for record in records:
                if self.failure is None:
                    self.out.write(record.to_dict())
        except OutputError as error:
            self.failure = str(error)

    def tries(self, attempt: int, measured: list[dict[str, Any]]) -> None:
        from collscope.links.run import median_gbs
        from collscope.records.links import LinkTryRecord

        records = []
        for m in measured:
            time_us, gbs = median_gbs(m["size"], m["times"])
            records.append(LinkTryRecord(
                scope=m["scope"], round=m["round"], attempt=attempt, src_rank=m["src"],
                dst_rank=m["dst"], src_host=self.devices[m["src"]]["host"],
                dst_host=self.devices[m["dst"]]["host"], size_bytes=m["size"],
                times_us=[t * 1e6 for t in m["times"]], time_us=time_us, gbs=gbs,
                stop=m["stop"], latency_us=m["latency"] * 1e6))
        self._write(records)

    def finish(self, outcome: Any, failed: bool) -> None:
        from dataclasses import asdict

        from collscope.records.links import LinksSummaryRecord

        rounds = {p.scope: len(p.rounds) for p in outcome.phases}
        rounds["confirmation"] = sum(c.rounds for c in outcome.confirmations)
        self._write([*outcome.links, *outcome.nodes, LinksSummaryRecord(
            verdict="fail" if failed else "pass",
            slow_nodes=[n.host for n in outcome.nodes if n.verdict == "slow"],
            thresholds=[asdict(t) for t in outcome.thresholds],
            confirmations=[asdict(c) for c in outcome.confirmations], rounds=rounds,
            seconds=outcome.seconds, round_seconds=outcome.round_seconds)])
        self.out.close()


TIMING = ("per pair and direction: median over -n iterations of perf_counter from posting a "
          "sendrecv (batch_isend_irecv both ways) to the receive's completion (GPU: plus a "
          "device synchronise); GB/s = size / time")


def render(outcome: Any, config: Any) -> None:
    from collscope.console import table_console

    with table_console(120, 160) as (console, style):
        _render(console, style, outcome, config)


def _render(console: Any, style: Any, outcome: Any, config: Any) -> None:
    from rich.table import Table

    rounds = ", ".join(f"{p.scope}-node {len(p.rounds)} rounds" for p in outcome.phases)
    console.print(f"collscope links: {format_size(config.size_bytes)} per direction, "
                  f"{config.iters} iterations per pair; {rounds}; {outcome.seconds:.1f} s")
    console.print(f"timing: {TIMING}")
    inter = [link for link in outcome.links if link.scope == "inter"]
    if inter:
        # --per-gpu: every local rank pair of two hosts has its own link, so a cell per host
        # pair would keep one of them; label by host and local rank instead.
        label = _local_rank_label(outcome.nodes) if config.per_gpu else \
            (lambda link, end: getattr(link, f"{end}_host"))
        what = "sender host/local rank" if config.per_gpu else "sender"
        console.print(_matrix(f"GB/s across nodes (row: {what}, column: receiver)", inter,
                              label, style))
    for node in outcome.nodes:
        own = [link for link in outcome.links
               if link.scope == "intra" and link.src_node == node.node]
        if own:
            console.print(_matrix(f"GB/s inside {node.host} (row: sender rank, column: "
                                  "receiver rank)", own, _rank_label, style))
    nodes = Table(title="nodes", box=style, title_justify="left")
    for column in ("host", "ranks", "NIC", "median GB/s", "best GB/s", "links", "verdict"):
        nodes.add_column(column)
    for node in outcome.nodes:
        nodes.add_row(node.host, ",".join(map(str, node.ranks)), ", ".join(node.nics) or "-",
                      "-" if node.median_gbs is None else f"{node.median_gbs:.3g}",
                      "-" if node.best_gbs is None else f"{node.best_gbs:.3g}", str(node.links),
                      "[bold red]slow[/]" if node.verdict == "slow" else "ok")
    console.print(nodes)
    bad = [link for link in outcome.links if link.verdict in ("slow", "below-link-type")]
    if bad:
        table = Table(title="failing links", box=style, title_justify="left")
        for column in ("scope", "src host", "src rank", "src device", "src NIC", "dst host",
                       "dst rank", "dst device", "dst NIC", "link type", "GB/s", "tries GB/s",
                       "expected", "verdict"):
            table.add_column(column)
        for link in bad:
            table.add_row(link.scope, link.src_host, str(link.src_rank),
                          link.src_device or "-", link.src_nic or "-", link.dst_host,
                          str(link.dst_rank), link.dst_device or "-", link.dst_nic or "-",
                          link.link_type or "-", f"{link.gbs:.3g}",
                          ", ".join(f"{gbs:.3g}" for gbs in link.tries_gbs) or "-",
                          "-" if link.expected_gbs is None else f"{link.expected_gbs:g}",
                          link.verdict)
        console.print(table)
    for limit in outcome.thresholds:
        console.print(f"threshold {limit.text()}")
    short = [link for link in outcome.links if link.iters < config.iters]
    if short:
        console.print(f"{len(short)} direction(s) judged on fewer than {config.iters} timed "
                      f"iterations (--pair-budget {config.pair_budget_s:g} s spent, or the "
                      "median's verdict already decided; iters in --json)")
    for confirmation in outcome.confirmations:
        console.print(confirmation.text() + " (a link fails only if it fails every try; "
                      "GB/s shown: its best try)")
    slow = [node for node in outcome.nodes if node.verdict == "slow"]
    for node in slow:
        mine = [link for link in inter if node.node in (link.src_node, link.dst_node)]
        console.print(f"[bold red]SLOW NODE[/] {node.host} (ranks "
                      f"{','.join(map(str, node.ranks))}, NIC {', '.join(node.nics) or '?'}): "
                      f"{_failing_side(mine, [link.src_node == node.node for link in mine])}")
    gpus = [(node, rank) for node in outcome.nodes for rank in node.slow_ranks]
    for node, rank in gpus:
        mine = [link for link in outcome.links
                if link.scope == "intra" and rank in (link.src_rank, link.dst_rank)]
        device = next((link.src_device if link.src_rank == rank else link.dst_device
                       for link in mine), None) or "?"
        what = "GPU" if device.startswith("cuda") else "RANK"
        console.print(f"[bold red]SLOW {what}[/] {node.host} rank {rank} ({device}): inside "
                      f"the node, {_failing_side(mine, [link.src_rank == rank for link in mine])}")
    if len({n.node for n in outcome.nodes}) == 2 and inter:
        console.print("note: with 2 nodes there is one pair; a slow link cannot be blamed on "
                      "either node (judging nodes needs >= 3)")
    console.print("verdict: " + ("FAIL" if slow or gpus or bad else "PASS") +
                  f" ({len(slow)} slow node(s), {len(gpus)} slow GPU(s), {len(bad)} failing "
                  "link(s) beyond them)")


def _failing_side(links: list[Any], sent: list[bool]) -> str:
    """Which of an endpoint's directions all fail (``sent``: per link, whether the endpoint
    sent it), and its best link in those directions."""
    sides = {"sends": [link for link, out in zip(links, sent, strict=True) if out],
             "receives": [link for link, out in zip(links, sent, strict=True) if not out]}
    failing = [side for side, own in sides.items()
               if own and all(link.verdict != "ok" for link in own)]
    best = max(link.gbs for side in failing for link in sides[side])
    return (f"every link it {' and '.join(failing)} is below the threshold (best "
            f"{best:.3g} GB/s)")


def _rank_label(link: Any, end: str) -> str:
    return f"{getattr(link, f'{end}_rank')} {getattr(link, f'{end}_device') or ''}".strip()


def _local_rank_label(nodes: list[Any]) -> Any:
    """``host/L``: the end's host and its local rank (place among its node's ranks)."""
    local = {rank: index for node in nodes for index, rank in enumerate(sorted(node.ranks))}

    def label(link: Any, end: str) -> str:
        rank = getattr(link, f"{end}_rank")
        return f"{getattr(link, f'{end}_host')}/{local.get(rank, f'rank {rank}')}"
    return label


def _matrix(title: str, links: list[Any], label: Any, style: Any) -> Any:
    from rich.table import Table

    names = sorted({label(link, "src") for link in links} | {label(link, "dst") for link in links},
                   key=lambda name: (len(name), name))
    by_pair = {(label(link, "src"), label(link, "dst")): link for link in links}
    matrix = Table(title=title, box=style, title_justify="left")
    matrix.add_column("src \\ dst")
    for name in names:
        matrix.add_column(name, justify="right")
    for src in names:
        cells = []
        for dst in names:
            link = by_pair.get((src, dst))
            cells.append("-" if link is None else
                         (f"{link.gbs:.3g}" if link.verdict == "ok"
                          else f"[bold red]{link.gbs:.3g} {link.verdict}[/]"))
        matrix.add_row(src, *cells)
    return matrix
