"""Prometheus text and exporter, the summary, the compact line and the live view."""

from __future__ import annotations

import io
import re
import urllib.error
import urllib.request

import pytest

from collscope.errors import UsageError
from collscope.monitor.prometheus import PrometheusExporter, parse_listen, render
from collscope.monitor.summary import (
    SummaryBuilder,
    bytes_moved_by_endpoint,
    format_summary,
    format_value,
    human_bytes,
)
from collscope.monitor.view import LiveView, bar, compact_line, sparkline
from collscope.records.sample import SampleRecord

SAMPLE = SampleRecord(ts=1718000000.5, host="node0", metrics={
    "cpu.percent": 12.5,
    "mem.used_bytes": 8 * 1024**3,
    "mem.total_bytes": 64 * 1024**3,
    "net.eth0.rx_bytes_per_s": 1.5e9,
    "net.eth0.tx_bytes_per_s": 0.0,
    "net.lo.rx_bytes_per_s": 2000.0,
    "rdma.mlx5_0.1.rx_bytes_per_s": 2.4e10,
    "rdma.mlx5_0.1.hw.out_of_buffer_per_s": 3.0,
    "gpu.0.util_percent": 97.0,
    "gpu.0.mem_used_bytes": 60 * 1024**3,
    "gpu.0.power_w": 550.0,
    "gpu.1.util_percent": 12.0,
    "proc.cpu_seconds_per_s": 1.5,
})


def parse_exposition(text: str) -> tuple[dict[str, str], dict[tuple[str, frozenset], float]]:
    """(TYPE per name, value per (name, labels)) from the text format."""
    types, values = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            match = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)", line)
            assert match, line
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2)))
            values[(match.group(1), labels)] = float(match.group(3))
    return types, values


def test_render_names_types_labels_and_values():
    types, values = parse_exposition(render(SAMPLE))
    host = ("host", "node0")
    assert values[("collscope_cpu_percent", frozenset({host}))] == 12.5
    assert values[("collscope_gpu_utilization_percent", frozenset({("gpu", "0"), host}))] == 97
    assert values[("collscope_gpu_utilization_percent", frozenset({("gpu", "1"), host}))] == 12
    assert values[("collscope_gpu_power_watts", frozenset({("gpu", "0"), host}))] == 550
    assert values[("collscope_net_rx_bytes_per_second",
                   frozenset({("iface", "eth0"), host}))] == 1.5e9
    assert values[("collscope_rdma_rx_bytes_per_second",
                   frozenset({("device", "mlx5_0"), ("port", "1"), host}))] == 2.4e10
    assert values[("collscope_rdma_hw_counter_per_second",
                   frozenset({("device", "mlx5_0"), ("port", "1"), ("counter", "out_of_buffer"),
                              host}))] == 3
    assert values[("collscope_sample_timestamp_seconds", frozenset({host}))] == SAMPLE.ts
    assert set(types.values()) == {"gauge"}
    assert set(types) == {name for name, _ in values}   # every family has HELP/TYPE


def test_render_help_and_type_once_per_family_and_escapes_labels():
    text = render(SampleRecord(ts=1.0, host='we"ird\\host', metrics={
        "gpu.0.util_percent": 1.0, "gpu.1.util_percent": 2.0}))
    assert text.count("# TYPE collscope_gpu_utilization_percent gauge") == 1
    assert text.count("# HELP collscope_gpu_utilization_percent ") == 1
    assert 'host="we\\"ird\\\\host"' in text
    assert render(None) == ""


@pytest.mark.parametrize("text, expected", [
    ("9400", ("127.0.0.1", 9400)),
    (":9400", ("127.0.0.1", 9400)),
    ("0.0.0.0:9400", ("0.0.0.0", 9400)),
    ("node0:0", ("node0", 0)),
    ("[::1]:9400", ("::1", 9400)),
])
def test_parse_listen(text, expected):
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "host:", "1.2.3.4:99999", "-1", "[::1]"])
def test_parse_listen_rejects(text):
    with pytest.raises(UsageError, match=r"--prometheus: .* is not \[HOST:\]PORT"):
        parse_listen(text)


def test_exporter_serves_latest_sample_over_http():
    exporter = PrometheusExporter("127.0.0.1", 0).start()
    try:
        host, port = exporter.address
        assert host == "127.0.0.1" and port > 0
        with urllib.request.urlopen(exporter.url, timeout=5) as response:
            assert response.status == 200 and response.read() == b""
        exporter(SAMPLE)
        with urllib.request.urlopen(exporter.url, timeout=5) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            types, values = parse_exposition(response.read().decode())
        assert types["collscope_cpu_percent"] == "gauge"
        assert values[("collscope_cpu_percent", frozenset({("host", "node0")}))] == 12.5
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/nope", timeout=5)
        assert missing.value.code == 404
    finally:
        exporter.close()


def test_exporter_port_in_use_is_a_usage_error():
    first = PrometheusExporter("127.0.0.1", 0)
    try:
        with pytest.raises(UsageError, match="--prometheus: cannot listen on 127.0.0.1:"):
            PrometheusExporter("127.0.0.1", first.address[1])
    finally:
        first.close()


def test_summary_mean_peak_and_bytes_moved():
    builder = SummaryBuilder()
    for cpu, rx in ((10.0, 100.0), (30.0, 300.0), (20.0, 0.0)):
        builder.add(SampleRecord(ts=0, host="h", metrics={"cpu.percent": cpu,
                                                          "net.lo.rx_bytes_per_s": rx}))
    builder.add(SampleRecord(ts=0, host="h", metrics={"cpu.percent": 40.0}))
    summary = builder.build(host="h", interval_s=1.0, started_at=5.0, duration_s=4.0,
                            bytes_moved={"net.lo.rx_bytes": 400.0, "net.lo.tx_bytes": 400.0,
                                         "net.eth1.rx_bytes": 0.0}, exit_code=7)
    assert summary.samples == 4
    assert summary.metrics["cpu.percent"].mean == 25.0
    assert summary.metrics["cpu.percent"].peak == 40.0
    assert summary.metrics["net.lo.rx_bytes_per_s"].samples == 3     # absent != 0
    assert summary.metrics["net.lo.rx_bytes_per_s"].mean == pytest.approx(133.333)
    data = summary.to_dict()
    assert data["kind"] == "summary" and data["exit_code"] == 7
    assert data["metrics"]["cpu.percent"]["peak"] == 40.0
    assert bytes_moved_by_endpoint(summary.bytes_moved) == {"net.lo": {"rx": 400.0, "tx": 400.0}}
    text = "\n".join(format_summary(summary))
    assert "cpu.percent" in text and "25.0 %" in text and "40.0 %" in text
    assert "net.lo" in text and "400 B" in text and "eth1" not in text


def test_summary_leaves_out_rates_that_stayed_zero():
    builder = SummaryBuilder()
    builder.add(SampleRecord(ts=0, host="h", metrics={"net.ifb0.rx_bytes_per_s": 0.0,
                                                      "mem.used_bytes": 0.0}))
    text = format_summary(builder.build(host="h", interval_s=1, started_at=0, duration_s=1,
                                        bytes_moved={}))
    assert not any("ifb0" in line for line in text)
    assert any("1 rates stayed 0" in line for line in text)
    assert any(line.startswith("mem.used_bytes") for line in text)   # gauges always shown


@pytest.mark.parametrize("metric, value, text", [
    ("net.eth0.rx_bytes_per_s", 1.5e9, "1.50 GB/s"),
    ("gpu.0.mem_used_bytes", 1.5 * 1024**3, "1.50 GiB"),
    ("gpu.0.util_percent", 97.04, "97.0 %"),
    ("cpu.percent", 5.0, "5.0 %"),
    ("gpu.0.power_w", 550.0, "550.0 W"),
    ("gpu.0.temperature_c", 48.0, "48.0 C"),
    ("proc.cpu_seconds_per_s", 1.5, "1.50 cores"),
    ("rdma.m.1.hw.out_of_buffer_per_s", 3.0, "3/s"),
])
def test_format_value(metric, value, text):
    assert format_value(metric, value) == text


def test_human_bytes():
    assert human_bytes(512) == "512 B"
    assert human_bytes(2048) == "2.00 KiB"
    assert human_bytes(2.5e9, binary=False) == "2.50 GB"


def test_sparkline_and_bar():
    assert sparkline([]) == ""
    assert sparkline([0, 0]) == "▁▁"
    assert sparkline([0, 50, 100], top=100) == "▁▅█"
    assert sparkline([1, 2, 4]) == "▃▅█"
    assert bar(0.0, 4) == "    "
    assert bar(1.0, 4) == "████"
    assert bar(0.5, 4) == "██  "
    assert bar(1.7, 2) == "██"


def test_compact_line_shows_busy_interfaces_and_every_gpu():
    line = compact_line(SAMPLE)
    assert "node0" in line and "cpu 12.5%" in line and "8.00 GiB/64.00 GiB" in line
    assert "eth0 rx 1.50 GB/s tx 0 B/s" in line
    assert "mlx5_0.1 rx 24.00 GB/s" in line
    assert "gpu0 97% 60.00 GiB 550W" in line and "gpu1 12%" in line
    assert "cmd 1.50 cores" in line


def test_live_view_renders_gpus_nics_and_rdma():
    from rich.console import Console

    console = Console(file=io.StringIO(), width=140, force_terminal=False)
    view = LiveView(console=console, interval=0.5)
    view.history["gpu.0.util_percent"].extend([10.0, 50.0])
    console.print(view.render(SAMPLE))
    text = console.file.getvalue()
    for expected in ("GPUs", "97%", "550 W", "network interfaces", "eth0", "1.50 GB/s",
                     "RDMA ports", "mlx5_0.1", "cpu", "12.5 %"):
        assert expected in text, expected


def test_live_view_redraws_at_most_every_min_redraw_and_draws_the_last_sample_at_close():
    from rich.console import Console

    view = LiveView(console=Console(file=io.StringIO(), width=120), min_redraw_s=60)
    drawn = []
    view.render = lambda sample: drawn.append(sample.ts) or ""
    view.start()
    for ts in (1.0, 2.0, 3.0):
        view(SampleRecord(ts=ts, host="h", metrics={"cpu.percent": ts}))
    assert drawn == [1.0]
    assert list(view.history["cpu.percent"]) == [1.0, 2.0, 3.0]   # every sample is kept
    view.close()
    assert drawn == [1.0, 3.0]
