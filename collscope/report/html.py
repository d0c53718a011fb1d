"""The self-contained HTML report: one file that opens offline and fetches nothing.

Charts are inline SVG drawn by ``svg.py``; the only script is ours (clicking a legend entry
hides or shows that series in both charts of a collective) and the page's
Content-Security-Policy admits exactly that script and our style sheet by hash and nothing else:
no network, no other script. Every string from an input is escaped with ``esc`` (host names,
env values, log lines, record fields): the CSP is a second wall, not the first.

``render_report`` is pure: inputs and a generation time in, the page out.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from collscope import __version__
from collscope.records.load import OTHER_KINDS, Input, Run
from collscope.records.train import OverlapResult, TrainRecord
from collscope.redact import is_secret_name, redact_argv, redact_secrets
from collscope.report import charts as ch
from collscope.report.svg import esc, legend_swatch, render
from collscope.report.trace_charts import trace_charts, trace_headline
from collscope.units import format_size

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2328;
       margin: 0 auto; padding: 16px 24px 48px; max-width: 1320px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #d8dde2; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.meta { color: #5f6b73; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; max-width: 602px; }
svg.chart { background: #fff; border: 1px solid #e3e7eb; border-radius: 4px; max-width: 100%;
            height: auto; }
svg.chart .title { font-size: 13px; font-weight: 600; fill: #1d2328; }
svg.chart .tick { font-size: 11px; fill: #4a545c; }
svg.chart .label { font-size: 12px; fill: #1d2328; }
svg.chart .grid { stroke: #e9edf0; stroke-width: 1; }
svg.chart .frame { fill: none; stroke: #aab3ba; stroke-width: 1; }
svg.chart .series.off { opacity: 0.07; }
ul.legend { list-style: none; padding: 0; margin: 8px 0; display: flex; flex-wrap: wrap;
            gap: 4px 18px; }
ul.legend li { cursor: pointer; user-select: none; display: flex; align-items: center; gap: 6px; }
ul.legend li.off { opacity: 0.35; text-decoration: line-through; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid #dde2e6; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f5f7; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.diff td { background: #fff7e0; }
.scroll { overflow-x: auto; }
.note { color: #5f6b73; font-size: 12px; margin: 2px 0 8px; }
.dot { display: inline-block; width: 10px; height: 10px; border-radius: 5px; }
.warn { color: #8a4b00; }
details { margin: 6px 0; } code { font-size: 12px; }
svg.chart .value { font-size: 11px; }
.headline { border-left: 4px solid #5f6b73; padding: 4px 12px; margin: 8px 0 12px;
            background: #f6f8fa; }
.headline p.verdict { font-size: 16px; font-weight: 600; margin: 2px 0; }
.headline ul { margin: 4px 0; padding-left: 18px; font-size: 13px; }
.headline.fail { border-color: #c9302c; background: #fdf1f0; }
.headline.warn { border-color: #b86200; background: #fdf6ec; }
.headline.pass { border-color: #2c7a3f; background: #f0f8f2; }
ul.glance { padding-left: 18px; margin: 8px 0 4px; font-size: 15px; }
ul.glance li.fail a { color: #a5231f; } ul.glance li.warn a { color: #8a4b00; }
"""

# A legend entry toggles its series in every chart it belongs to: the charts of its section
# (collectives: busbw and time share one legend) or of its figure (monitor timelines).
SCRIPT = """
document.querySelectorAll("ul.legend li[data-s]").forEach(function (item) {
  // Entries become buttons only where this script runs (without it they are plain text).
  item.setAttribute("role", "button");
  item.setAttribute("tabindex", "0");
  item.setAttribute("aria-pressed", "true");
  function toggle() {
    var key = item.getAttribute("data-s");
    var off = !item.classList.contains("off");
    item.classList.toggle("off", off);
    item.setAttribute("aria-pressed", off ? "false" : "true");
    item.closest("figure, section").querySelectorAll("g.series").forEach(function (g) {
      if (g.getAttribute("data-s") === key) { g.classList.toggle("off", off); }
    });
  }
  item.addEventListener("click", toggle);
  item.addEventListener("keydown", function (event) {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); toggle(); }
  });
});
"""


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


CSP = (f"default-src 'none'; style-src '{_sha256(STYLE)}'; script-src '{_sha256(SCRIPT)}'; "
       "img-src data:; base-uri 'none'; form-action 'none'")


@dataclass
class Section:
    """One part of the page: its headlines (verdict or headline numbers) first, then its
    charts and tables (already rendered HTML)."""

    id: str
    title: str
    headlines: list[ch.Headline]
    body: str


def render_report(inputs: list[Input], generated_at: float | None = None,
                  title: str = "collscope report") -> str:
    """The whole page for ``inputs``; ``generated_at`` (epoch seconds) defaults to now.

    Order: what the report concludes first (a line per section), then each section (its
    verdict or headline numbers, its charts, its tables), then the run contexts, the inputs
    and the warnings of reading them.
    """
    generated_at = time.time() if generated_at is None else generated_at
    sections = [section for section in report_sections(inputs) if section is not None]
    body = [f"<h1>{esc(title)}</h1>",
            f'<p class="meta">collscope {esc(__version__)} · generated '
            f"{esc(_iso(generated_at))} · {len(inputs)} input(s)</p>",
            _glance(sections), *(_section(section) for section in sections),
            _contexts_section([run for source in inputs for run in source.runs]),
            _inputs_section(inputs), _warnings_section(inputs)]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(part for part in body if part)
            + f"\n<script>{SCRIPT}</script>\n</body>\n</html>\n")


def report_sections(inputs: list[Input]) -> list[Section | None]:
    """Every section the inputs call for, in page order (None: nothing of that kind)."""
    runs = [run for source in inputs for run in source.runs]
    colors = ch.ColorBook()
    collectives = ch.collective_views(inputs, colors)
    predictions = ch.prediction_charts(inputs, colors)
    trains = ch.train_views(inputs)
    overlaps = [(run.label, record) for run in runs for record in run.overlap]
    return [
        _charts_section("hang", "Hangs", ch.hang_heat_maps(inputs),
                        [h for run in runs if (h := ch.hang_headline(run))], legend=False),
        _charts_section("watch", "Watched jobs", ch.watch_charts(inputs),
                        [h for run in runs if (h := ch.watch_headline(run))]),
        _charts_section("links", "Links", ch.link_heat_maps(inputs),
                        [h for run in runs if (h := ch.links_headline(run))], legend=False),
        _charts_section("trace", "Profiler traces", trace_charts(inputs),
                        [h for run in runs if run.trace and (h := trace_headline(run))]),
        Section("collectives", "Collectives", [_collectives_headline(collectives)],
                COLLECTIVES_NOTE + "".join(_collective_section(v) for v in collectives))
        if collectives else None,
        _charts_section("model", "Model predictions", predictions,
                        [h for h in (ch.prediction_headline(inputs),) if h]),
        Section("train", "Training sweeps", [_train_headline(view) for view in trains],
                "".join(_train_section(view) for view in trains)) if trains else None,
        _charts_section("tune", "Tuning sweeps", ch.tune_charts(inputs),
                        [h for run in runs if (h := ch.tune_headline(run))]),
        _charts_section("monitor", "Monitor timelines", ch.monitor_charts(inputs),
                        [h for run in runs if (h := ch.monitor_headline(run))]),
        Section("overlap", "Compute and communication overlap",
                [_overlap_headline(label, record) for label, record in overlaps],
                _overlap_table(overlaps)) if overlaps else None,
    ]


def _charts_section(section_id: str, title: str, charts: Sequence[ch.Chart],
                    headlines: list[ch.Headline], legend: bool = True) -> Section | None:
    if not charts and not headlines:
        return None
    blocks = "".join(_chart_block(chart, with_legend=legend) for chart in charts)
    return Section(section_id, title, headlines, f'<div class="charts">{blocks}</div>')


def _section(section: Section) -> str:
    headlines = "".join(_headline(h) for h in section.headlines)
    return (f'<section id="{esc(section.id)}"><h2>{esc(section.title)}</h2>'
            f'{headlines}{section.body}</section>')


def _headline(headline: ch.Headline) -> str:
    details = "".join(f"<li>{esc(line)}</li>" for line in headline.details)
    return (f'<div class="headline {esc(headline.level)}"><p class="verdict">'
            f"{esc(headline.text)}</p>{f'<ul>{details}</ul>' if details else ''}</div>")


def _glance(sections: list[Section]) -> str:
    """The page's conclusions first: each section's first headline, linked to the section."""
    items = "".join(
        f'<li class="{esc(s.headlines[0].level)}"><a href="#{esc(s.id)}">{esc(s.title)}</a>: '
        f"{esc(s.headlines[0].text)}</li>" for s in sections if s.headlines)
    return f'<ul class="glance">{items}</ul>' if items else ""


def all_charts(inputs: list[Input]) -> list[ch.Chart]:
    """Every chart of the report, in page order (what --png writes)."""
    charts: list[ch.Chart] = []
    for view in ch.collective_views(inputs):
        charts += [view.busbw, view.time]
    charts += ch.prediction_charts(inputs)
    charts += [view.chart for view in ch.train_views(inputs)]
    charts += ch.tune_charts(inputs)
    charts += trace_charts(inputs)
    charts += ch.monitor_charts(inputs)
    charts += ch.link_heat_maps(inputs)
    charts += ch.hang_heat_maps(inputs)
    charts += ch.watch_charts(inputs)
    return charts


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def _chart_block(chart: ch.Chart, with_legend: bool = False) -> str:
    svg = render(chart)
    note = f'<p class="note">{esc(chart.note)}</p>' if chart.note else ""
    legend = ""
    if with_legend and isinstance(chart, ch.LineChart):
        legend = _legend([ch.LegendEntry(s.key, s.label, s.color, s.dashed, s.marker)
                          for s in chart.series])
    return f"<figure>{svg}{legend}{note}</figure>"


def _legend(entries: list[ch.LegendEntry]) -> str:
    items = "".join(
        f'<li data-s="{esc(entry.key)}">'
        f"{legend_swatch(entry.color, entry.dashed, entry.marker)}{esc(entry.label)}</li>"
        for entry in entries)
    return f'<ul class="legend">{items}</ul>'


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    """A table of already escaped cells; columns in ``numeric`` are right-aligned."""
    numeric = numeric or set()
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
        for i, cell in enumerate(row)) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><tr>{head}</tr>{body}</table></div>'


def _inputs_section(inputs: list[Input]) -> str:
    rows = []
    for source in inputs:
        counts = source.counts()
        others = ", ".join(f"{counts[kind]} {label}" for kind, label in OTHER_KINDS.items()
                           if counts[kind])
        rows.append([esc(source.name), esc(source.kind), str(counts["runs"]),
                     str(counts["results"]), esc(others), str(len(source.warnings)),
                     f"<code>{esc(source.path)}</code>"])
    return ('<h2 id="inputs">Inputs</h2>'
            + _table(["input", "kind", "run records", "results", "other records", "warnings",
                      "path"], rows, {2, 3, 5}))


COLLECTIVES_NOTE = ('<p class="note">Solid lines and filled circles: out-of-place; dashed '
                    "lines and open squares: in-place. Log axes. busbw and algbw use "
                    "nccl-tests' definitions (GB/s = 1e9 B/s); time is each input's own timing "
                    "method (see Run contexts). Click a legend entry to hide or show it; hover "
                    "a point for its numbers.</p>")


def _collectives_headline(views: list[ch.CollectiveView]) -> ch.Headline:
    """The peak busbw of each collective (its best series), the numbers a bench run is for."""
    def best(view: ch.CollectiveView) -> str:
        peak = max(view.peaks, key=lambda p: p["peak_busbw_gbs"])
        return (f"{view.name} {peak['peak_busbw_gbs']:.4g} GB/s at "
                f"{format_size(peak['peak_at'])} ({peak['series']})")
    return ch.Headline("peak busbw: " + "; ".join(best(v) for v in views if v.peaks))


def _collective_section(view: ch.CollectiveView) -> str:
    peaks = _table(
        ["series", "sizes", "range", "peak busbw (GB/s)", "at size", "#wrong"],
        [[f'{_dot(p["color"])} {esc(p["series"])}', str(p["sizes"]),
          f'{esc(format_size(p["smallest"]))} – {esc(format_size(p["largest"]))}',
          f'{p["peak_busbw_gbs"]:.4g}', esc(format_size(p["peak_at"])),
          "N/A" if p["wrong"] is None else str(p["wrong"])]
         for p in view.peaks], {1, 3, 5})
    return (f'<section id="c-{esc(ch.slug(view.name))}"><h3>{esc(view.name)}</h3>{peaks}'
            f'<div class="charts">{_chart_block(view.busbw)}{_chart_block(view.time)}</div>'
            f"{_legend(view.legend)}</section>")


def _dot(color: str) -> str:
    # A coloured dot drawn in SVG: a style attribute would be refused by the page's CSP.
    return (f'<svg width="10" height="10" aria-hidden="true"><circle cx="5" cy="5" r="5" '
            f'fill="{color}"/></svg>')


# ---------------------------------------------------------------------------------------------
# Run contexts
# ---------------------------------------------------------------------------------------------


def _devices_summary(devices: Any) -> str:
    if not isinstance(devices, list) or not devices:
        return ""
    names = Counter(str(d.get("name") or d.get("device_type") or "unnamed")
                    if isinstance(d, dict) else str(d) for d in devices)
    return ", ".join(f"{count} × {name}" for name, count in names.items())


def _hosts_summary(hosts: Any, shown: int = 8) -> str:
    if not isinstance(hosts, list):
        return "" if hosts is None else str(hosts)
    text = ", ".join(str(h) for h in hosts[:shown])
    return text + (f" … and {len(hosts) - shown} more" if len(hosts) > shown else "")


def _when(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return _iso(float(value))
    return ""                          # not known (an imported log): left out, not "unknown"


def context_rows(runs: list[Run]) -> list[tuple[str, list[str]]]:
    """(field, value per run) for the side-by-side table; values are plain (unescaped) text."""
    contexts = [run.context for run in runs]

    def field(name: str, render: Any = None) -> list[str]:
        values = [c.get(name) for c in contexts]
        return [(render(v) if render else ("" if v is None else str(v))) for v in values]

    def count(name: str) -> list[str]:
        # A job has at least one rank and node: 0 is how a record says "not known" (a trace
        # does not know its nodes), so it is left out rather than printed.
        return [str(v) if isinstance(v, int) and not isinstance(v, bool) and v > 0 else ""
                for v in (c.get(name) for c in contexts)]

    rows = [
        ("command", field("command")),
        ("collscope version", field("collscope_version")),
        ("launcher", field("launcher")),
        ("backend", field("backend")),
        ("world size", count("world_size")),
        ("nodes", count("nodes")),
        ("ranks per node", count("ranks_per_node")),
        ("hosts", field("hosts", _hosts_summary)),
        ("devices", field("devices", _devices_summary)),
        ("timing", field("timing")),
        ("started", field("started_at", _when)),
        ("command line", [_command_line(c) for c in contexts]),
        ("source", [str((c.get("extra") or {}).get("source") or "")
                    if isinstance(c.get("extra"), dict) else "" for c in contexts]),
    ]
    for group in ("versions", "env"):
        keys: list[str] = []
        for c in contexts:
            values = c.get(group)
            if isinstance(values, dict):     # a hand-made or old record may hold a secret
                keys += [str(k) for k in values if str(k) not in keys
                         and not (group == "env" and is_secret_name(str(k)))]
        for key in sorted(keys):
            rows.append((f"{group}: {key}", [
                "" if not isinstance(c.get(group), dict) or c[group].get(key) is None
                else redact_secrets(str(c[group][key])) for c in contexts]))  # proxy URLs
    return rows


def _command_line(context: dict[str, Any]) -> str:
    """The captured command line, secret-named values hidden (records of any origin)."""
    extra = context.get("extra")
    if isinstance(extra, dict) and extra.get("command_line"):
        return redact_secrets(str(extra["command_line"]))
    argv = context.get("argv")
    return " ".join(redact_argv([str(a) for a in argv])) if isinstance(argv, list) else ""


def _contexts_section(runs: list[Run]) -> str:
    runs = [run for run in runs if run.context]
    if not runs:
        return ('<h2 id="contexts">Run contexts</h2><p class="note">No run records in the '
                "inputs.</p>")
    head = "<tr><th>field</th>" + "".join(f"<th>{esc(run.label)}</th>" for run in runs) + "</tr>"
    body = []
    for name, values in context_rows(runs):
        if not any(values):
            continue
        differs = len(runs) > 1 and len(set(values)) > 1
        cells = "".join(f"<td>{esc(v)}</td>" for v in values)
        row_class = ' class="diff"' if differs else ""
        body.append(f"<tr{row_class}><th>{esc(name)}</th>{cells}</tr>")
    return ('<h2 id="contexts">Run contexts</h2><p class="note">Side by side; rows that differ '
            'between runs are highlighted.</p><div class="scroll"><table>' + head
            + "".join(body) + "</table></div>")


# ---------------------------------------------------------------------------------------------
# Train and warnings
# ---------------------------------------------------------------------------------------------


def _train_cell(record: TrainRecord, name: str) -> str:
    value = getattr(record, name)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return esc(value)
    if name.endswith("_bytes") or name == "comm_bytes_per_step":
        return esc(format_size(int(value)))
    if name == "overlap_fraction":
        return f"{value * 100:.1f}%"
    return esc(ch.format_number(value))


def _train_section(view: ch.TrainView) -> str:
    columns = list(ch.TRAIN_COLUMNS)
    rows = [[esc(ch.config_text(rec.config)), *(_train_cell(rec, c) for c in columns)]
            for rec in view.rows]
    return (f"<section><h3>{esc(view.run.label)}</h3>"
            + _table(["configuration", *columns], rows, set(range(1, len(columns) + 1)))
            + f'<div class="charts">{_chart_block(view.chart)}</div></section>')


def _train_headline(view: ch.TrainView) -> ch.Headline:
    fastest = view.rows[0]
    step, exposed = ch.as_number(fastest.step_time_ms), ch.as_number(fastest.exposed_comm_ms)
    said = [f"step {ch.format_number(step)} ms" if step is not None else "",
            f"exposed communication {ch.format_number(exposed)} ms"
            if exposed is not None else ""]
    return ch.Headline(f"{view.run.label}: fastest of {len(view.rows)} configuration(s): "
                       f"{ch.config_text(fastest.config)}"
                       + "".join(f"; {part}" for part in said if part))


def _overlap_headline(label: str, record: OverlapResult) -> ch.Headline:
    efficiency = ch.as_number(record.overlap_efficiency)
    times = [(mode, ch.as_number(getattr(record, f"t_{mode}_ms"))) for mode in
             ("compute", "comm", "both")]
    said = ", ".join(f"t_{mode} {ch.format_number(v)} ms" for mode, v in times if v is not None)
    return ch.Headline(f"{label}: overlap efficiency "
                       + (f"{efficiency:.2f}" if efficiency is not None else "n/a")
                       + (f" ({said})" if said else ""))


def _overlap_table(overlaps: list[tuple[str, OverlapResult]]) -> str:
    """`collscope overlap` records: the three medians, their IQRs and the efficiency."""
    def ms(record: OverlapResult, mode: str) -> str:
        value, iqr = getattr(record, f"t_{mode}_ms"), getattr(record, f"t_{mode}_ms_iqr")
        if not isinstance(value, (int, float)):
            return ""
        spread = f" (IQR {ch.format_number(iqr)})" if isinstance(iqr, (int, float)) else ""
        return esc(f"{ch.format_number(value)}{spread}")

    rows = []
    for label, r in overlaps:
        dim, size, eff = r.matmul_dim, r.size_bytes, r.overlap_efficiency
        rows.append([esc(label), esc(r.world_size),
                     esc(f"{dim}x{dim}x{dim} {r.matmul_dtype}"),
                     esc(f"{format_size(size)} {r.comm_dtype}"
                         if isinstance(size, int) else ""),
                     ms(r, "compute"), ms(r, "comm"), ms(r, "both"),
                     esc(f"{eff:.2f}" if isinstance(eff, (int, float)) else "n/a"),
                     esc(r.iters), esc(r.timing)])
    return ('<p class="note">'
            "collscope overlap: a matmul and an all_reduce alone and together; times in ms, "
            "medians over iterations of the slowest rank; overlap efficiency = (t_compute + "
            "t_comm - t_both) / min(t_compute, t_comm): 1 the shorter hides completely, 0 "
            "serialised, below 0 slower together, above 1 noise around fully hidden.</p>"
            + _table(["run", "ranks", "matmul", "all_reduce", "t_compute", "t_comm", "t_both",
                      "efficiency", "iterations", "timing"], rows, {1, 4, 5, 6, 7, 8}))


def _warnings_section(inputs: list[Input]) -> str:
    warnings = [w for source in inputs for w in source.warnings]
    if not warnings:
        return ""
    items = "".join(f'<li class="warn">{esc(redact_secrets(w))}</li>' for w in warnings)
    return (f'<h2 id="warnings">Warnings</h2><details><summary>{len(warnings)} warning(s) from '
            f"reading the inputs (line numbers refer to each input)</summary><ul>{items}</ul>"
            "</details>")
