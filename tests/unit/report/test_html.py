"""The HTML report and its charts: what is drawn, escaping, self-containment, axis math, PNGs."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from collscope.records.load import Input, load_input, parse_input
from collscope.report import charts as ch
from collscope.report.html import CSP, SCRIPT, STYLE, all_charts, render_report
from collscope.report.svg import HEIGHT, WIDTH, line_chart
from tests.conftest import fixture_path
from tests.unit.report.samples import (
    EVIL,
    run_record,
    samples,
    sweep,
    train_records,
    write_jsonl,
)

GENERATED = 1_700_000_000.0


def _jsonl_text() -> str:
    return "\n".join(json.dumps(r.to_dict()) for r in sweep())


def _evil_input(tmp_path: Path) -> Input:
    """Hostile text in every string field an input can carry."""
    path = write_jsonl(tmp_path / "<b>evil&'\".jsonl", [
        run_record(EVIL, NCCL_SOCKET_IFNAME=EVIL), *sweep("all_reduce"),
        *[r for r in sweep("alltoall") if r.in_place is False],
        *train_records(EVIL), *samples(EVIL)])
    source = load_input(path)
    source.warnings.append(f"line 1: {EVIL}")
    return source


def test_every_input_string_is_escaped(tmp_path: Path) -> None:
    page = render_report([_evil_input(tmp_path)], GENERATED, title=EVIL)
    assert EVIL not in page and "<b>evil" not in page
    assert "alert(1)" in page                       # shown, as text
    assert page.count("&lt;script&gt;") >= 8        # title, host, env, legend, train, monitor...
    assert len(re.findall(r"<script\b", page)) == 1  # ours only


def test_page_is_self_contained_and_its_csp_admits_only_our_style_and_script() -> None:
    source = parse_input(_jsonl_text(), "s.jsonl")
    page = render_report([source], GENERATED)
    # Nothing is fetched: no src attribute, no href but links inside the page (#section), no
    # URL other than the SVG namespace.
    assert not re.search(r"\ssrc\s*=", page)
    assert re.findall(r'\shref\s*=\s*"([^"]*)"', page) == ["#collectives"]
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"\sstyle\s*=", page)       # the CSP would refuse inline styles

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"<style>{STYLE}</style>" in page and f"<script>{SCRIPT}</script>" in page
    assert f"'sha256-{digest(STYLE)}'" in CSP and f"'sha256-{digest(SCRIPT)}'" in CSP
    assert "default-src 'none'" in CSP and CSP in page


def test_collectives_get_busbw_and_time_charts_with_every_input_overlaid(tmp_path: Path) -> None:
    bench = load_input(write_jsonl(tmp_path / "bench.jsonl",
                                   [run_record(), *sweep("all_reduce"), *sweep("all_gather")]))
    log = load_input(fixture_path("nccl-tests-logs", "mi300x_8gpu_allreduce_rccl_k8s.txt"))
    views = ch.collective_views([bench, log])
    assert [v.name for v in views] == ["all_reduce", "all_gather"]
    all_reduce = views[0]
    labels = [s.label for s in all_reduce.busbw.series]
    assert labels == ["bench.jsonl · 4 ranks · out-of-place", "bench.jsonl · 4 ranks · in-place",
                      "mi300x_8gpu_allreduce_rccl_k8s.txt · 8 ranks · out-of-place",
                      "mi300x_8gpu_allreduce_rccl_k8s.txt · 8 ranks · in-place"]
    # Placements differ in dash and marker, inputs in colour; one colour per input everywhere.
    assert [s.dashed for s in all_reduce.busbw.series] == [False, True, False, True]
    assert [s.marker for s in all_reduce.time.series] == ["circle", "square"] * 2
    colors = [s.color for s in all_reduce.busbw.series]
    assert colors[0] == colors[1] != colors[2] == colors[3]
    assert views[1].busbw.series[0].color == colors[0]
    # The log's 8-64 B rows print busbw 0.00: not drawn on a log axis, and said so.
    log_busbw = all_reduce.busbw.series[2].points
    assert len(log_busbw) == 31 - 3 and min(x for x, _ in log_busbw) == 128 / 2
    assert "not drawn" in all_reduce.busbw.note
    assert len(all_reduce.time.series[2].points) == 31
    assert (8589934592, 315.69) in log_busbw
    peak = all_reduce.peaks[2]
    assert peak["peak_busbw_gbs"] == 315.69 and peak["peak_at"] == 8589934592

    page = render_report([bench, log], GENERATED)
    assert page.count('<svg class="chart"') == 4
    assert page.count('<g class="series"') == 4 + 4 + 2 + 2
    assert "8 × AMD Instinct MI300X" in page and "develop:a7809b3" in page


def test_train_and_monitor_sections_appear_only_with_their_records(tmp_path: Path) -> None:
    plain = load_input(write_jsonl(tmp_path / "b.jsonl", [run_record(), *sweep()]))
    page = render_report([plain], GENERATED)
    assert 'id="train"' not in page and 'id="monitor"' not in page
    rich = load_input(write_jsonl(tmp_path / "t.jsonl",
                                  [run_record(), *train_records(), *samples()]))
    page = render_report([rich], GENERATED)
    assert 'id="train"' in page and 'id="monitor"' in page
    (train,) = ch.train_views([rich])
    assert [r.step_time_ms for r in train.rows] == [90.0, 100.0, 120.0]   # fastest first
    assert train.chart.stacks[1][2] == [12.0, 20.0, 40.0]
    families = {c.title: c for c in ch.monitor_charts([rich])}
    assert set(families) == {"cpu.percent", "mem.used_bytes", "net.*.rx_bytes_per_s",
                             "net.*.tx_bytes_per_s"}   # gpu util was null: absent, not 0
    assert families["cpu.percent"].series[0].points[1][0] == pytest.approx(0.5)
    # The monitor section opens with how long it watched and the peaks of network and GPU
    # metrics (gpu util was null throughout: no peak said for it).
    headline = ch.monitor_headline(rich.runs[0])
    assert headline is not None and headline.text == "t.jsonl: 12 sample(s) over 5.5 s"
    assert headline.details == ["peak net.*.rx_bytes_per_s: 300M bytes/s (node0 node0)",
                                "peak net.*.tx_bytes_per_s: 50M bytes/s (node0 eth0)"]
    assert page.index(headline.text) < page.index('id="svg-monitor_')


def test_context_table_puts_runs_side_by_side_and_marks_differences(tmp_path: Path) -> None:
    source = load_input(write_jsonl(tmp_path / "two.jsonl", [
        run_record("alpha", NCCL_ALGO="Ring"), *sweep(),
        run_record("beta", NCCL_ALGO="Tree"), *sweep()]))
    page = render_report([source], GENERATED)
    row = re.search(r'<tr class="diff"><th>env: NCCL_ALGO</th><td>Ring</td><td>Tree</td></tr>',
                    page)
    assert row
    assert '<tr><th>launcher</th><td>torchrun</td><td>torchrun</td></tr>' in page


@pytest.mark.parametrize("lo, hi, base, ticks", [
    (8, 65536, 2, [16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0]),
    (1, 2, 2, [1.0, 2.0]),
    (0.5, 300, 10, [0.1, 1.0, 10.0, 100.0, 1000.0]),
    (3, 30, 10, [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]),
    (7, 7, 10, [1.0, 2.0, 5.0, 10.0]),
    (10, 10, 10, [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]),
])
def test_log_ticks_frame_the_data(lo: float, hi: float, base: int, ticks: list[float]) -> None:
    axis_lo, axis_hi, got = ch.log_ticks(lo, hi, base)
    assert axis_lo <= lo and axis_hi >= hi
    assert got[0] >= axis_lo and got[-1] <= axis_hi and len(got) <= 10
    assert got == pytest.approx(ticks)


def test_size_ticks_stay_few_over_a_wide_sweep() -> None:
    _, _, ticks = ch.log_ticks(8, 16 * 2**30, 2)
    assert 4 <= len(ticks) <= 10
    assert [ch.format_bytes_tick(t) for t in ticks][-1] in ("16G", "4G", "1G")


def test_linear_ticks_are_round() -> None:
    lo, hi, ticks = ch.linear_ticks(0.0, 29.3)
    assert (lo, hi) == (0.0, 30.0) and ticks == [0, 5, 10, 15, 20, 25, 30]


@pytest.mark.parametrize("value, text", [(1e-6, "1e-6"), (0.05, "0.05"), (12.5, "12.5"),
                                         (4500, "4.5k"), (3e9, "3G")])
def test_numbers_are_compact(value: float, text: str) -> None:
    assert ch.format_number(value) == text


@pytest.mark.parametrize("text", ["../../etc/passwd", ".hidden", "a b/c", EVIL, ""])
def test_slugs_are_safe_file_names(text: str) -> None:
    name = ch.slug(text)
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name)


def test_metric_family() -> None:
    assert ch.metric_family("gpu.3.util_percent") == ("gpu.*.util_percent", "3")
    assert ch.metric_family("rdma.mlx5_0.1.rx_bytes_per_s") == ("rdma.*.rx_bytes_per_s",
                                                                "mlx5_0.1")
    assert ch.metric_family("cpu.percent") == ("cpu.percent", "")


def test_long_timelines_are_thinned_but_keep_their_spikes() -> None:
    points = [(float(t), 1.0) for t in range(10_000)]
    points[4321] = (4321.0, 50.0)
    points[8765] = (8765.0, -3.0)
    kept = ch.decimate(points, 1000)
    assert len(kept) <= 1002 and kept == sorted(kept)
    assert (4321.0, 50.0) in kept and (8765.0, -3.0) in kept
    assert ch.decimate(points[:10], 1000) == points[:10]


def test_line_chart_points_fall_inside_the_frame() -> None:
    chart = ch.collective_views([parse_input(_jsonl_text(), "x.jsonl")])[0].time
    svg = line_chart(chart)
    xs = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg)]
    ys = [float(y) for y in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)"', svg)]
    assert len(xs) == len(sweep()) // 2
    assert all(0 < x < WIDTH for x in xs) and all(0 < y < HEIGHT for y in ys)
    assert xs == sorted(xs)                           # sizes grow to the right
    assert ys == sorted(ys, reverse=True)             # time grows upwards


def test_png_files_are_the_same_charts(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from collscope.report.plots import write_pngs

    source = _evil_input(tmp_path)
    charts = all_charts([source])
    written = write_pngs(charts, tmp_path / "png")
    assert [p.name for p in written] == [f"{c.id}.png" for c in charts]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)
    assert all(p.parent == tmp_path / "png" for p in written)


def test_secrets_in_records_of_any_origin_are_not_rendered(tmp_path: Path) -> None:
    # An old import or a hand-made record: a token in argv, in the command line and in env.
    record = run_record("node0", NCCL_SOCKET_IFNAME="ens5", NCCL_API_TOKEN="sekrit1")
    record["argv"] = ["env", "HF_TOKEN=sekrit2", "all_reduce_perf"]
    with_line = {**record, "extra": {"command_line": "NCCL_API_TOKEN=sekrit3 all_reduce_perf"}}
    path = write_jsonl(tmp_path / "x.jsonl", [record, *sweep(), with_line, *sweep()])
    page = render_report([load_input(path)], generated_at=GENERATED)
    assert "sekrit" not in page and "NCCL_API_TOKEN" not in page.split("env: ")[-1]
    assert "env HF_TOKEN=&lt;hidden&gt; all_reduce_perf" in page
    assert "NCCL_API_TOKEN=&lt;hidden&gt; all_reduce_perf" in page
    assert "env: NCCL_SOCKET_IFNAME" in page


def test_credentials_in_env_values_of_any_record_are_not_rendered(tmp_path: Path) -> None:
    # A hand-made record whose variable holds a URL with a password, and *_PASS names.
    record = run_record("node0", NCCL_SOCKET_IFNAME="ens5", NCCL_NET_PLUGIN_PASS="sekrit5",
                        UCX_PROXY="http://u:sekrit6@proxy:3128")
    path = write_jsonl(tmp_path / "x.jsonl", [record, *sweep()])
    page = render_report([load_input(path)], generated_at=GENERATED)
    assert "sekrit" not in page and "NCCL_NET_PLUGIN_PASS" not in page
    assert "http://u:&lt;hidden&gt;@proxy:3128" in page and "env: NCCL_SOCKET_IFNAME" in page


@pytest.mark.parametrize(("words", "shown"), [
    (["NCCL_API_TOKEN=sekrit", "NCCL_SOCKET_IFNAME=ens5"],
     ["NCCL_API_TOKEN=<hidden>", "NCCL_SOCKET_IFNAME=ens5"]),
    (["NCCL_API_TOKEN=two words", "x"], ["NCCL_API_TOKEN=<hidden>", "x"]),  # quoted as text
    (["--auth-key=abc", "-b", "8"], ["--auth-key=<hidden>", "-b", "8"]),
    (["--export=A=b,HF_TOKEN=zz"], ["--export=A=b,HF_TOKEN=<hidden>"]),
    (["-genv", "MY_SECRET", "x", "-genv", "NCCL_IB_HCA", "mlx5"],
     ["-genv", "MY_SECRET", "<hidden>", "-genv", "NCCL_IB_HCA", "mlx5"]),
    (["run", "--token", "abc", "--password", "p", "-b", "8"],           # option, value apart
     ["run", "--token", "<hidden>", "--password", "<hidden>", "-b", "8"]),
])
def test_redact_argv_and_the_same_command_as_text(words: list[str], shown: list[str]) -> None:
    import shlex

    from collscope.redact import redact_argv, redact_secrets

    assert redact_argv(words) == shown
    assert shlex.split(redact_secrets(shlex.join(words))) == shown
    # Quoted the other way (NAME="a b"), the value is hidden whole too.
    assert redact_secrets('NCCL_API_TOKEN="two words" x') == "NCCL_API_TOKEN=<hidden> x"


@pytest.mark.parametrize(("text", "shown"), [
    ('{"HF_TOKEN": "abc123", "n": 1}', '{"HF_TOKEN": <hidden>, "n": 1}'),   # JSON: name quoted
    ("{'HF_TOKEN': 'abc 123'}", "{'HF_TOKEN': <hidden>}"),
    ("Authorization: Bearer abc123 next", "Authorization: <hidden> next"),  # the credential
    ("ib_hca: mlx5_0 GPU 0: H100", "ib_hca: mlx5_0 GPU 0: H100"),            # nothing secret
])
def test_redact_secrets_in_echoed_configs(text: str, shown: str) -> None:
    from collscope.redact import redact_secrets

    assert redact_secrets(text) == shown


def test_model_predictions_open_with_the_largest_size_predicted_per_layout() -> None:
    from collscope.records.model import PredictionRecord

    records = [PredictionRecord("all_reduce", size, nodes, 8, 8 * nodes, "ring", 10.0 * size,
                                2.0 * nodes, 9.0 * size, 11.0 * size,
                                extrapolated=nodes == 16).to_dict()
               for nodes in (8, 16) for size in (1 << 20, 1 << 30)]
    source = parse_input("\n".join(json.dumps(r) for r in records), "pred.jsonl")
    headline = ch.prediction_headline([source])
    assert headline is not None and headline.details == [
        "all_reduce on 8 node(s) x 8 at 1 GiB: 1.074e+10 us (9.664e+09 to 1.181e+10), "
        "busbw 16 GB/s, ring",
        "all_reduce on 16 node(s) x 8 at 1 GiB: 1.074e+10 us (9.664e+09 to 1.181e+10), "
        "busbw 32 GB/s, ring (extrapolated)"]
    assert headline.text.endswith("; and 1 more layout(s)")
    page = render_report([source], GENERATED)
    assert page.index(headline.text) < page.index("<svg")
