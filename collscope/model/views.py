"""Output of `collscope model`: tables (rich; Markdown off a terminal), nccl-tests rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from collscope.console import table_console
from collscope.model.costmodel import EXTRAPOLATED_NOTE, OUTSIDE_FOR
from collscope.model.fit import BAND_METHOD, GROWTH_METHOD
from collscope.units import format_size_exact


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]],
                left: Sequence[str] = ()) -> None:
    """A rich table; off a terminal, a Markdown table without trailing blanks."""
    from rich.table import Table

    with table_console(120, 160) as (console, style):
        table = Table(title=title, box=style, title_justify="left")
        for name in columns:
            table.add_column(name, justify="left" if name in left else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)



def pct(log_factor: float) -> str:
    return f"{math.expm1(log_factor) * 100:+.1f}%"


def fit_label(record: Any) -> str:
    """A prediction's fit column: in-range, or how far its size and node count extrapolate."""
    parts = [f"{what} x{factor:.1f}" if factor < 10 else f"{what} x{factor:,.0f}"
             for what, factor in
             (("nodes", record.nodes_extrapolation), ("size", record.size_extrapolation))
             if factor > 1]
    return " ".join(parts) or "in-range"


def print_nccl_table(block: list[Any], dtype: str, model_path: str) -> None:
    from collscope.collectives.dtypes import DTYPES
    from collscope.collectives.table import COLLECTIVES

    first = block[0]
    spec = COLLECTIVES[first.collective]
    element = DTYPES[dtype].size
    print(f"# collscope model predict: {first.collective} on {first.nodes} node(s) x "
          f"{first.ranks_per_node} ranks = {first.world_size} ranks, from {model_path}")
    # Rows may differ in algorithm (auto picks per size) and in being extrapolated: every
    # method used is said once, and each extrapolated row is marked on its own line.
    methods = list(dict.fromkeys(r.method.partition(EXTRAPOLATED_NOTE)[0] for r in block))
    for method in methods:
        print(f"# time: predicted time per op by the cost model; {method}")
    for band in dict.fromkeys(r.band_method for r in block):
        print(f"# time_low..time_high: {band}")
    for tail in dict.fromkeys(r.tail for r in block if r.tail):
        print(f"# tail: {tail}")
    outside = dict.fromkeys(
        label for r in block if r.size_extrapolation > 1
        for label in r.method.partition(OUTSIDE_FOR)[2].split(", "))
    if outside:
        print(f"# fit: size xF = the size lies F times outside the sizes fitted for "
              f"{', '.join(outside)}; the band does not cover that")
    if first.nodes_extrapolation > 1:
        print(f"# fit: nodes x{first.nodes_extrapolation:.1f} = {first.nodes} node(s) lies "
              f"{first.nodes_extrapolation:.1f} times outside the node counts fitted "
              f"({', '.join(map(str, first.fitted_nodes))}); the band does not cover that")
    print("#       size         count      type   redop    root     time   algbw   busbw"
          "   time_low  time_high  algo          fit")
    print("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
          "       (us)       (us)")
    for r in block:
        count, _ = spec.count_and_size(r.size_bytes, element, r.world_size)
        redop = "sum" if spec.reduces else "none"
        root = 0 if spec.rooted else -1
        print(f"{r.size_bytes:>12}  {count:>12}  {dtype:>8}  {redop:>6}  {root:>6}  "
              f"{r.time_us:>7.1f}  {r.algbw_gbs:>6.2f}  {r.busbw_gbs:>6.2f}  "
              f"{r.time_us_low:>9.1f}  {r.time_us_high:>9.1f}  {r.algo:<12}  {fit_label(r)}")
    print()


def print_check(report: Any, request: Any) -> None:
    rows = [[b.collective, f"{b.nodes}x{b.ranks_per_node}", b.band, str(b.rows),
             f"{b.median_error_pct:.1f}%", f"{b.max_error_pct:.1f}%",
             f"{b.medians_in_band} of {b.sizes}", "yes" if b.in_sample else "no"]
            for b in report.bands]
    print_table(f"model check: {request.model} against {', '.join(request.inputs)}",
                ["collective", "layout", "size band", "rows", "median |error|", "max |error|",
                 "medians in band", "fitted on it"], rows, left=["collective", "size band"])
    coverage = report.coverage()
    print(f"error: {report.method}")
    print(f"in band: {report.band_method}; {coverage['medians_in_band']} of "
          f"{coverage['sizes']} sizes ({coverage['medians_in_band_pct']:.0f}%)")


def print_plan(result: Any, request: Any) -> None:
    header, rows, params = result.header, result.rows, result.header.params
    element = result.config.element_size
    what = request.parallel.upper() + (f", {request.bucket_cap_mb:g} MB buckets, hook "
                                       f"{request.comm_hook}" if request.parallel == "ddp" else "")
    print(f"plan: {header.preset or 'custom'} ({params:,} parameters, {request.dtype}), "
          f"{what}")
    total = rows[0].bytes_per_step if rows else 0
    check = params * element
    scope = ("gradient all-reduce" if request.parallel == "ddp"
             else "all-gather forward + backward, reduce-scatter")
    print(f"bytes per step per rank ({scope}): {total:,} = {total / check:.3g} x "
          f"{params:,} params x {element} bytes")
    print(f"overlap: {header.overlap:g} ({header.overlap_source}); compute per step: "
          + (f"{header.step_compute_ms:g} ms ({header.step_compute_source})"
             if header.step_compute_ms is not None else header.step_compute_source))

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    table = []
    for r in rows:
        algos = ", ".join(f"{a} x{n}" for a, n in sorted(r.algos.items())) or "-"
        knob = f"{r.best_knob} ({ms(r.best_knob_comm_ms)} ms)" if r.best_knob else "-"
        table.append([str(r.nodes), str(r.world_size), str(r.messages), str(r.extrapolated),
                      f"{r.comm_ms:.1f} ({r.comm_ms_low:.1f}-{r.comm_ms_high:.1f})"
                      if r.comm_ms is not None else "-", algos, ms(r.exposed_ms), ms(r.step_ms),
                      f"{r.tokens_per_s:,.0f}" if r.tokens_per_s else "-",
                      f"{r.scaling_efficiency:.1%}" if r.scaling_efficiency else "-",
                      knob if not r.note else r.note])
    base = next((r.nodes for r in rows if r.step_ms), None)
    if any(r.extrapolated for r in rows):
        print("outside fit: messages whose size or node count lies outside those the groups "
              "they use were fitted on (extrapolated: the band does not cover that)")
    print_table(f"predicted per step at {request.ranks_per_node} ranks per node (comm: sum of "
                "the messages' predicted times, band in brackets; step = compute + (1 - "
                "overlap) x comm; efficiency = step at "
                + (f"{base} node(s)" if base else "the first node count") + " / step at N)",
                ["nodes", "ranks", "messages", "outside fit", "comm ms", "algorithms",
                 "exposed ms", "step ms", "tokens/s", "scaling eff.",
                 "best knob (comm ms) / note"], table,
                left=["algorithms", "best knob (comm ms) / note"])
    for r in rows:
        if len(r.phase_ms) > 1:
            print(f"{r.nodes} node(s), comm ms per phase: "
                  + ", ".join(f"{phase} {value:.1f}" for phase, value in r.phase_ms.items()))


def print_fit(model: Any, output: str, held: list[int]) -> None:
    rows = []
    for g in model.groups:
        f = g.fit
        sizes = f"{format_size_exact(f.min_bytes)}-{format_size_exact(f.max_bytes)}"
        rows.append([g.key.label, str(f.rows), sizes,
                     f"{f.alpha_us:.4g}",
                     f"{f.busbw_gbs:.4g}" if f.identified else "unidentified",
                     f"{f.max_error_pct:.1f}%",
                     f"{pct(f.band_low)}..{pct(f.band_high)}",
                     f"{len(f.tails)} of {f.runs}", str(len(f.outliers))])
    print_table("fitted groups: t = alpha + S x busbw factor / B", ["group", "rows", "sizes",
                "alpha (us)", "B (GB/s)", "max |error|", "typical band", "tail runs",
                "outliers"], rows, left=["group"])
    print(f"fit: {model.groups[0].fit.method}")
    print(f"band: {BAND_METHOD}")
    print(f"B: {GROWTH_METHOD}")
    for g in model.groups:
        if not g.fit.identified:
            print(f"B of {g.key.label} unidentified: {g.fit.busbw_unidentified}; predictions "
                  "that need it are refused")
    print(f"wrote {output}: {len(model.groups)} group(s) from {len(model.contexts)} run(s)"
          + (f", node counts {held} held out" if held else ""))
