"""What `collscope trace` prints and records: the collectives, steps and ranks tables and the
findings (rich; Markdown off a terminal), and the JSON Lines records (run first)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from collscope.console import table_console
from collscope.units import format_size_exact


def write_json_records(target: str, result: Any, argv: Sequence[str]) -> None:
    from collscope.records.jsonl import write_records
    from collscope.records.run import RunRecord

    traces = result.traces
    hosts = sorted({t.host for t in traces if t.host})
    run = RunRecord.create(
        "trace", argv=["collscope", *argv], launcher="trace",
        backend=traces[0].backend or "unknown",
        world_size=traces[0].world_size or len(traces), nodes=len(hosts),
        ranks_per_node=0, hosts=hosts,
        devices=[{"rank": t.rank, "path": t.path} for t in traces], versions={}, env={},
        timing=_timing(traces),
        extra={"window": traces[0].window,
               "baseline": result.baseline.sources if result.baseline else [],
               "clock_alignment": result.across.clock.to_dict()
               if result.across and result.across.clock else None,
               "call_matching": [found.to_dict() for found in result.across.shifts]
               if result.across else []}).to_dict()
    write_records(target, [run, *result.records()])


def _timing(traces: list[Any]) -> str:
    kinds = {t.timing for t in traces}
    if kinds == {"cpu spans"}:
        return ("CPU-only trace: each collective timed by its backend span (gloo:*) on the "
                "CPU, compute = other threads' CPU ops")
    return "GPU kernel start/end of communication and compute kernels (Kineto)"


def _fmt(value: float | None, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def render(result: Any) -> None:
    with table_console(180, 200, markup=False) as (console, style):
        _render(console, style, result)


def _render(console: Any, style: Any, result: Any) -> None:
    from rich.table import Table

    from collscope.trace.table import pooled_rows

    traces = result.traces
    first = traces[0]
    ranks = ", ".join(str(t.rank) for t in traces)
    console.print(f"# collscope trace: {len(traces)} trace(s), rank(s) {ranks} of world "
                  f"{first.world_size or '?'} ({first.backend or 'unknown backend'})")
    console.print(f"# timing: {_timing(traces)}; window: {first.window}")
    if not result.has_comm:
        console.print("no communication in these traces"
                      + (" (world size 1)" if first.world_size == 1 else "")
                      + ": no collective kernels or backend spans; nothing to analyse")
    else:
        rows = pooled_rows(result)
        table = Table(title="Collectives (all ranks pooled; p50/p95 over calls; busbw: "
                            "nccl-tests factors, p50 time)", box=style, title_justify="left")
        columns = ["collective", "dtype", "size", "group", "calls/step", "p50 us", "p95 us",
                   "algo/proto", "algbw GB/s", "busbw GB/s", "% of step"]
        if result.baseline:
            columns += ["baseline busbw", "efficiency", "saves ms/step"]
        for name in columns:
            table.add_column(name, justify="left" if name in ("collective", "dtype",
                                                              "algo/proto") else "right")
        for r in rows:
            cells = [r.collective, r.dtype or "?", format_size_exact(r.size_bytes)
                     if r.size_bytes is not None else "?",
                     f"{r.group + ':' if r.group else ''}{r.group_size or '?'} ranks",
                     _fmt(r.calls_per_step, ".3g"),
                     _fmt(r.kernel_us_p50, ".4g"), _fmt(r.kernel_us_p95, ".4g"),
                     "/".join(x for x in (r.algorithm, r.protocol) if x) or "-",
                     _fmt(r.algbw_gbs), _fmt(r.busbw_gbs), _fmt(r.step_share_percent, ".1f")]
            if result.baseline:
                cells += [_fmt(r.baseline_busbw_gbs),
                          "-" if r.efficiency is None else f"{100 * r.efficiency:.0f}%",
                          _fmt(r.saving_ms_per_step)]
            table.add_row(*cells)
        console.print(table)
        if any(not r.group and r.group_size for r in rows):
            console.print("# group 'N ranks' without a name: the trace names no process group "
                          "for those calls; the world size (or its only group) is assumed")
        if result.baseline:
            notes = sorted({r.baseline for r in rows if r.efficiency is None and r.baseline})
            for note in notes:
                console.print(f"# baseline: {note}")
    _steps_table(console, result, style)
    _ranks_table(console, result, style)
    for finding in result.findings:
        console.print(f"[{finding.level}] {finding.title} (at stake {finding.at_stake_ms:.3g} "
                      f"ms/step)\n    why: {finding.detail}\n    fix: {finding.fix}\n"
                      f"    decided by: {finding.test}")
    if result.has_comm and not result.findings:
        console.print("no findings: nothing at stake by collscope's rules")


def _steps_table(console: Any, result: Any, style: Any) -> None:
    from rich.table import Table

    trace = result.traces[0]
    if not trace.steps:
        return
    table = Table(title=f"Steps of rank {trace.rank} (ms of what ran inside each step's span, "
                        "whenever launched; exposed = comm with no compute running; idle = step "
                        "- busy)", box=style, title_justify="left")
    for name in ("step", "step", "compute", "comm", "exposed comm", "overlap %", "idle"):
        table.add_column(name, justify="right")
    for s in trace.steps:
        table.add_row(str(s.step), f"{s.step_ms:.4g}", f"{s.compute_ms:.4g}",
                      f"{s.comm_ms:.4g}", f"{s.exposed_comm_ms:.4g}",
                      _fmt(s.overlap_percent, ".1f"), f"{s.idle_ms:.4g}")
    console.print(table)


def _ranks_table(console: Any, result: Any, style: Any) -> None:
    from rich.table import Table

    window = result.traces[0].window
    table = Table(title=f"Ranks (every column over the window: {window}; late = ready for the "
                        "call last; late steps = steps whose most-delayed call waited on it)",
                  box=style, title_justify="left")
    for name in ("rank", "comm ms", "compute ms", "exposed ms", "overlap %", "calls",
                 "late calls", "late steps", "wait caused ms"):
        table.add_column(name, justify="right")
    for r in result.rank_records():
        table.add_row(str(r.rank), f"{r.comm_kernel_ms:.4g}", f"{r.compute_kernel_ms:.4g}",
                      f"{r.exposed_comm_ms:.4g}", _fmt(r.overlap_percent, ".2f"), str(r.calls),
                      str(r.late_calls), str(r.late_steps), f"{r.wait_caused_ms:.4g}")
    console.print(table)
    if result.across:
        console.print(f"# across ranks: {len(result.across.matched)} calls matched "
                      f"({result.across.method})"
                      + (f"; {result.across.unmatched_calls} calls not on every rank"
                         if result.across.unmatched_calls else ""))
        for line in result.across.matching_lines():
            console.print(f"# matching {line}")
        _clock_lines(console, result.across.clock)
        if result.across.straggler is None and result.across.straggler_test:
            console.print(f"# {result.across.straggler_test}")


def _clock_lines(console: Any, clock: Any) -> None:
    if clock is None:
        return
    state = "applied" if clock.applied else "not applied"
    console.print(f"# clock alignment {state} ({clock.reason})")
    if not clock.offsets:
        return
    console.print(f"# clock offsets vs rank {clock.reference} ({clock.method}):")
    spread = "median |pair residual|" if clock.chained else "MAD"
    for o in clock.offsets:
        if o.rank == clock.reference:
            continue
        ci = f"{math.floor(100 * o.ci_confidence)}% CI {o.ci_low_us:+.1f}..{o.ci_high_us:+.1f}"
        at = (f" at t0 = {o.origin_us:.1f} us on rank {clock.reference}'s clock"
              if o.drift_applied else "")
        drift = ("" if o.drift_ppm is None else
                 f"; drift {o.drift_ppm:+.3g} ppm ({o.drift_decision})")
        console.print(f"#   rank {o.rank}: {o.offset_us:+.1f} us ({ci}){at}, spread ({spread}) "
                      f"{o.spread_us:.1f} us over {o.calls} calls{drift}")
