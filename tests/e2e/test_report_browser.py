"""The reports of bench, trace, links, hang and watch as a person sees them: laid out by
headless Chromium at 1400 px wide, then measured.

Chromium runs a copy of each page with one more script, a probe, that reads what the browser
laid out (element order, every chart text's bounding box, each heat-map cell's fill and the
computed fill of its text, the run-context table) into a ``<pre>`` that ``--dump-dom`` prints.
The copy's Content-Security-Policy admits the probe by its hash as the page admits its own
script; the real page's CSP and console are checked by tests/e2e/test_report_cli.py. Chromium
alone does it (no DevTools client, no node/playwright): the probe is a few lines of DOM calls
and everything is judged here in Python, contrast by WCAG 2's own formula.

Each report is built by a function in REPORTS from real data where the repository has it
(nccl-tests logs, a real `collscope links` run, real `collscope watch` runs) and from records
of the real schema classes where the case needs a shape we have no capture of (530 matched
calls, a 4-node cluster with one slow node); a new report kind is one more entry.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from collscope.records.finding import FindingRecord
from collscope.records.links import LinkRecord, LinksSummaryRecord, NodeRecord
from collscope.records.trace import TraceRankRecord, TraceStepRecord
from collscope.report.html import CSP
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.helpers import CHROMIUM, chromium, run_cli

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="chromium not installed (/usr/bin/chromium)")

PROBE = """
(function () {
  function box(el) {
    var r = el.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  }
  var out = {order: [], sections: {}, charts: [], contexts: []};
  Array.prototype.forEach.call(document.body.children, function (el) {
    out.order.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
                   (el.className ? "." + el.className : ""));
  });
  document.querySelectorAll("body > section").forEach(function (section) {
    out.sections[section.id] = Array.prototype.map.call(section.children, function (el) {
      return el.tagName.toLowerCase() + (el.className ? "." + el.className.split(" ")[0] : "");
    });
  });
  document.querySelectorAll("svg.chart").forEach(function (svg) {
    var chart = {id: svg.id, texts: [], cells: []};
    svg.querySelectorAll("text").forEach(function (t) {
      if (t.textContent.trim()) { chart.texts.push([t.textContent, box(t)]); }
      if (t.classList.contains("value")) {
        var cell = t.previousElementSibling;
        chart.cells.push([t.textContent, cell.getAttribute("fill"),
                          getComputedStyle(t).fill]);
      }
    });
    out.charts.push(chart);
  });
  // The run-context table: what follows its heading, up to the next heading.
  for (var el = document.getElementById("contexts").nextElementSibling;
       el && el.tagName !== "H2"; el = el.nextElementSibling) {
    el.querySelectorAll("tr").forEach(function (tr) {
      out.contexts.push(Array.prototype.map.call(tr.children, function (c) {
        return c.textContent; }));
    });
  }
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""
# Rows of the run-context table whose value a command may not know: never shown as 0.
COUNT_ROWS = ("world size", "nodes", "ranks per node")


# ---------------------------------------------------------------------------------------------
# The reports
# ---------------------------------------------------------------------------------------------


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def bench_inputs(tmp_path: Path) -> list[Path]:
    """Two real nccl-tests logs of one H100 cluster, default and tuned."""
    return [fixture_path("nccl-tests-logs", "h100_2node_default_nccl_issue309.txt"),
            fixture_path("nccl-tests-logs", "h100_2node_ring_minctas24_qps2_nccl_issue309.txt")]


def trace_inputs(tmp_path: Path) -> list[Path]:
    """A 4-rank trace analysis with 530 matched calls (the size whose call numbers once
    overlapped into one string), rank 2 late from call 200 on; nodes unknown, as trace
    writes them (0)."""
    records: list[dict] = [{"kind": "run", "command": "trace", "launcher": "trace",
                            "backend": "nccl", "world_size": 4, "nodes": 0,
                            "ranks_per_node": 0, "hosts": [], "extra": {}}]
    for rank in range(4):
        late = [round(((call * 7 + rank * 3) % 11) * 0.01 + (
            2.5 if rank == 2 and call >= 200 else 0.0), 3) for call in range(530)]
        records.append(TraceRankRecord(
            rank=rank, path=f"rank{rank}.json.gz", timing="gpu kernels", window="all",
            comm_kernel_ms=900.0, compute_kernel_ms=2100.0, exposed_comm_ms=180.0 + rank,
            overlap_percent=62.0 - rank, late_calls=330 if rank == 2 else 0,
            wait_caused_ms=825.0 if rank == 2 else 0.0, calls=530,
            late_by_call=late).to_dict())
        records += [TraceStepRecord(rank=rank, step=step, step_ms=300.0, compute_ms=210.0,
                                    comm_ms=90.0, exposed_comm_ms=18.0, overlap_percent=80.0,
                                    idle_ms=2.0).to_dict() for step in range(10)]
    records.append(FindingRecord(
        id="straggler", level="warn", title="rank 2 starts its collectives late",
        detail="the others wait for it", fix="look at rank 2's input pipeline",
        at_stake_ms=82.5, rank=2, test="binomial test over steps, p = 0.001").to_dict())
    return [_jsonl(tmp_path / "trace.jsonl", records)]


def _link(src: int, dst: int, gbs: float, limit: float) -> dict:
    return LinkRecord(
        src_host=f"node{src}", dst_host=f"node{dst}", src_rank=8 * src, dst_rank=8 * dst,
        src_device="cuda:0", dst_device="cuda:0", src_nic="mlx5_0", dst_nic="mlx5_0",
        scope="inter", link_type=None, size_bytes=64 << 20, iters=20,
        time_us=(64 << 20) / gbs / 1e3, gbs=gbs, expected_gbs=None,
        verdict="node" if 2 in (src, dst) else "ok" if gbs >= limit else "slow",
        src_node=src, dst_node=dst).to_dict()


def links_inputs(tmp_path: Path) -> list[Path]:
    """A real 1-node 4-rank `collscope links` run (one failing direction), and a 4-node
    cluster whose node2 is slow: its links 0.4 GB/s against a 1.064 GB/s threshold, a healthy
    link at 1.12 GB/s just above it."""
    limit = 1.064
    speeds = {(a, b): 0.4 if 2 in (a, b) else 1.12 if (a, b) == (0, 3) else 1.52
              for a in range(4) for b in range(4) if a != b}
    records: list[dict] = [{"kind": "run", "command": "links", "launcher": "slurm",
                            "backend": "nccl", "world_size": 32, "nodes": 4,
                            "ranks_per_node": 8, "hosts": [f"node{n}" for n in range(4)]}]
    records += [_link(a, b, gbs, limit) for (a, b), gbs in speeds.items()]
    records += [NodeRecord(host=f"node{n}", node=n, ranks=list(range(8 * n, 8 * n + 8)),
                           nics=["mlx5_0"], median_gbs=0.4 if n == 2 else 1.52,
                           best_gbs=0.4 if n == 2 else 1.52, links=6,
                           verdict="slow" if n == 2 else "ok").to_dict() for n in range(4)]
    records.append(LinksSummaryRecord(
        verdict="fail", slow_nodes=["node2"], confirmations=[], rounds={"inter": 3},
        seconds=41.0, thresholds=[{"scope": "across nodes", "reference_gbs": 1.52,
                                   "mad_gbs": 0.0, "limit_gbs": limit, "fraction": 0.7,
                                   "links": 6}]).to_dict())
    own = OWN_FIXTURES / "links" / "links_1node_4ranks_gloo_one_slow_direction.jsonl"
    return [fixture_path("own", "links", own.name), _jsonl(tmp_path / "cluster.jsonl", records)]


def hang_inputs(tmp_path: Path) -> list[Path]:
    """`collscope hang --json` of the real 16-rank NCCL Megatron dumps (ranks 9 and 14)."""
    out = tmp_path / "hang.jsonl"
    proc = run_cli("hang", str(fixture_path("flight-recorder", "nvrx_gpu_error_2nd")),
                   "--json", str(out), timeout=120)
    assert proc.returncode == 1, proc.stderr
    return [out]


def watch_inputs(tmp_path: Path) -> list[Path]:
    """Real `collscope watch --json` runs: a straggler episode, a healthy job and a stall
    (with hang's records), drawn side by side."""
    return [fixture_path("own", "watch", f"watch_4ranks_gloo_{case}.jsonl")
            for case in ("straggler_rank2", "healthy", "stall_rank2")]


# report name -> (its inputs, the id of the section it must show)
REPORTS: dict[str, tuple[Callable[[Path], list[Path]], str]] = {
    "bench": (bench_inputs, "collectives"), "trace": (trace_inputs, "trace"),
    "links": (links_inputs, "links"), "hang": (hang_inputs, "hang"),
    "watch": (watch_inputs, "watch")}


# ---------------------------------------------------------------------------------------------
# Rendering and measuring
# ---------------------------------------------------------------------------------------------


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


@pytest.fixture(scope="module", params=sorted(REPORTS))
def laid_out(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             ) -> tuple[str, dict]:
    """(report name, what Chromium laid out) for each report kind."""
    tmp = tmp_path_factory.mktemp(request.param)
    page = tmp / "report.html"
    proc = run_cli("report", *map(str, REPORTS[request.param][0](tmp)), "-o", str(page),
                   timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    assert CSP in text
    probed = text.replace(CSP, CSP.replace("script-src ", f"script-src '{_hash(PROBE)}' ")) \
        .replace("</body>", f"<script>{PROBE}</script>\n</body>")
    (tmp / "probed.html").write_text(probed)
    dom = chromium(tmp / "probed.html", tmp / "profile", "--dump-dom", "--window-size=1400,2000")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert not [line for line in dom.stderr.splitlines() if ":CONSOLE" in line], dom.stderr
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    return request.param, json.loads(html.unescape(found.group(1)))


def test_the_page_opens_with_its_conclusions_then_sections_then_contexts(laid_out) -> None:
    name, page = laid_out
    order = [tag.split(".")[0] for tag in page["order"]]
    assert order[:3] == ["h1", "p", "ul"] and page["order"][2] == "ul.glance", page["order"]
    sections = [i for i, tag in enumerate(order) if tag.startswith("section#")]
    assert sections and max(sections) < order.index("h2#contexts") < order.index("h2#inputs")
    assert f"section#{REPORTS[name][1]}" in order
    for section, children in page["sections"].items():
        # The verdict or the headline numbers come first, right under the heading.
        assert children[:2] == ["h2", "div.headline"], (section, children)
        assert "div.charts" in children or "section" in children, (section, children)


def _luminance(css: str) -> float:
    if css.startswith("#"):
        channels = [int(css[i:i + 2], 16) for i in (1, 3, 5)]
    else:
        channels = [int(c) for c in re.findall(r"\d+", css)[:3]]
    linear = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4
              for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_every_heat_map_cell_is_readable(laid_out) -> None:
    name, page = laid_out
    cells = [cell for chart in page["charts"] for cell in chart["cells"]]
    if name == "links":
        assert len(cells) == 12 + 12              # both matrices print their values
    for text, fill, text_fill in cells:
        high, low = sorted((_luminance(fill), _luminance(text_fill)), reverse=True)
        assert (high + 0.05) / (low + 0.05) >= 4.5, (name, text, fill, text_fill)


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_no_two_texts_of_a_chart_overlap(laid_out) -> None:
    name, page = laid_out
    assert page["charts"]
    for chart in page["charts"]:
        texts = chart["texts"]
        clashes = [(a[0], b[0]) for i, a in enumerate(texts) for b in texts[i + 1:]
                   if _overlap(a[1], b[1])]
        assert clashes == [], (name, chart["id"], clashes[:5])
    if name == "trace":
        (late,) = [c for c in page["charts"] if "lateness" in c["id"]]
        numbers = [t for t, _ in late["texts"] if t.isdigit()]
        assert numbers == [str(i) for i in range(0, 120, 10)]
    if name == "watch":
        ids = [c["id"] for c in page["charts"] if c["id"].startswith("svg-watch_")]
        assert len(ids) == 4, ids             # 3 lateness charts and the stall's pending ages
        def y_ticks(case: str) -> list[float]:
            (chart,) = [c for c in page["charts"] if "lateness" in c["id"] and case in c["id"]]
            # y ticks: right-aligned left of the frame, where the title starts
            return [float(t) for t, box in chart["texts"]
                    if t.replace(".", "").isdigit() and box[2] < chart["texts"][0][1][0]]

        # The straggler's 30 ms on its scale; the healthy job's ~1 ms on its own, not squashed
        # under its 320 ms start-up window (left out of the chart, said in its note).
        assert 30 in y_ticks("straggler") and max(y_ticks("straggler")) <= 40
        assert max(y_ticks("healthy")) <= 2.5


def test_no_field_the_command_does_not_know_is_printed_as_0(laid_out) -> None:
    name, page = laid_out
    rows = {row[0]: row[1:] for row in page["contexts"][1:]}
    assert rows["command"], page["contexts"]
    for field in COUNT_ROWS:
        assert "0" not in rows.get(field, []), (name, field, rows.get(field))
    assert not [row for row in page["contexts"] if "unknown" in row[1:]]
    if name == "trace":
        assert rows["world size"] == ["4"] and "nodes" not in rows
        assert "ranks per node" not in rows
