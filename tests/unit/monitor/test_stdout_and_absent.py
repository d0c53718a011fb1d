"""Review of monitor: '-' outputs keep stdout pure JSON, absent values are never shown as 0,
the summary names every statistic it writes."""

from __future__ import annotations

import io
import json
import sys
from types import SimpleNamespace

import pytest

from collscope.cli import main
from collscope.monitor.config import MonitorConfig
from collscope.monitor.run import output_path
from collscope.monitor.summary import SummaryBuilder
from collscope.monitor.view import LiveView, compact_line
from collscope.records.sample import SampleRecord
from tests.helpers import usage_error_in_process


def test_compact_line_leaves_out_an_absent_rss_instead_of_printing_0():
    cores_only = compact_line(SampleRecord(ts=0, host="h",
                                           metrics={"proc.cpu_seconds_per_s": 1.5}))
    assert cores_only.endswith("| cmd 1.50 cores") and "0 B" not in cores_only
    rss_only = compact_line(SampleRecord(ts=0, host="h", metrics={"proc.rss_bytes": 13 * 2**20}))
    assert rss_only.endswith("| cmd 13.00 MiB")


def test_live_view_shows_an_absent_gpu_total_or_rss_as_a_dash_not_0():
    from rich.console import Console

    console = Console(file=io.StringIO(), width=140, force_terminal=False)
    sample = SampleRecord(ts=0, host="h", metrics={"gpu.0.util_percent": 50.0,
                                                   "gpu.0.mem_used_bytes": 60 * 2**30,
                                                   "proc.cpu_seconds_per_s": 2.0})
    console.print(LiveView(console=console).render(sample))
    text = console.file.getvalue()
    assert "60.00 GiB / -" in text and "2.00 cores" in text
    assert "0 B" not in text


def run_in_process(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_jsonl_to_stdout_carries_only_json(capsys):
    code, out, err = run_in_process(capsys, ["monitor", "--duration", "0.25", "--interval",
                                             "0.1", "--gpu-backend", "none", "--json", "-"])
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]    # every line is JSON
    assert records[0]["kind"] == "run" and {r["kind"] for r in records[1:]} == {"sample"}
    assert "collscope monitor summary" in err


def test_summary_json_to_stdout_is_one_document_and_no_file_named_dash(capsys, tmp_path,
                                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_in_process(capsys, ["monitor", "--duration", "0.25", "--interval",
                                             "0.1", "--gpu-backend", "none",
                                             "--summary-json", "-"])
    assert code == 0, err
    summary = json.loads(out)
    assert summary["kind"] == "summary" and summary["samples"] >= 2
    assert "collscope monitor summary" in err and not (tmp_path / "-").exists()


@pytest.mark.parametrize("argv, flag", [
    (["--json", "-", "--", sys.executable, "-c", "pass"], "--json"),
    (["--summary-json", "-", "--", sys.executable, "-c", "pass"], "--summary-json"),
    (["--json", "-", "--summary-json", "-"], "--summary-json"),
])
def test_stdout_refused_where_something_else_owns_it(capsys, argv, flag):
    line = usage_error_in_process(capsys, ["monitor", "--duration", "0.1", *argv])
    assert line.startswith(f"collscope monitor: {flag}: '-' (stdout)"), line


def test_stdout_stays_stdout_in_a_multi_node_job():
    job = SimpleNamespace(world_size=16, local_world_size=8, node_rank=1, launcher="torchrun")
    assert output_path("--json", "-", "h", job) == "-"
    assert MonitorConfig(json="-").json_to_stdout and not MonitorConfig().json_to_stdout


def test_summary_method_names_every_statistic_it_writes():
    builder = SummaryBuilder()
    builder.add(SampleRecord(ts=0, host="h", metrics={"cpu.percent": 10.0}))
    data = builder.build(host="h", interval_s=1, started_at=0, duration_s=1,
                         bytes_moved={}).to_dict()
    for statistic in data["metrics"]["cpu.percent"]:
        if statistic != "samples":
            assert statistic in data["method"], statistic
    assert "weighted by the seconds" in data["method"] and "not counted as 0" in data["method"]


def test_summary_mean_is_weighted_by_the_seconds_each_sample_covers():
    # Samples at 0.5, 1.0 and a short final one at 1.2 s: 2510 bytes all in the last 0.2 s.
    # The mean rate is 2510 B / 1.2 s = 2091.667 B/s (equal weights would say 4183.333).
    from collscope.monitor import Sampler
    from collscope.monitor.sources import Reading
    from tests.helpers import ManualClock, Scripted

    clock = ManualClock()
    source = Scripted("s", [Reading({"cpu.percent": p}, {"net.lo.rx_bytes": c})
                            for p, c in ((0.0, 0), (10.0, 0), (10.0, 0), (70.0, 2510))])
    sampler = Sampler(interval=0.5, sources=[source], clock=clock, wall_clock=clock)
    sampler.baseline()
    for now in (0.5, 1.0, 1.2):
        clock.now = now
        sampler.sample_once()
    summary = sampler.summary()
    rx = summary.metrics["net.lo.rx_bytes_per_s"]
    assert rx.mean == pytest.approx(2510 / 1.2, abs=1e-3) and rx.peak == 12550.0
    assert rx.mean * summary.duration_s == pytest.approx(summary.bytes_moved["net.lo.rx_bytes"])
    assert summary.metrics["cpu.percent"].mean == pytest.approx((10 * 1.0 + 70 * 0.2) / 1.2,
                                                                abs=1e-3)


def test_jsonl_that_cannot_take_the_run_record_is_bad_input_before_the_command(capsys,
                                                                                tmp_path):
    # /dev/full opens fine but refuses every write (ENOSPC): the up-front check, which opens the
    # file and writes nothing to it, catches it before the command starts.
    marker = tmp_path / "ran"
    line = usage_error_in_process(capsys, ["monitor", "--json", "/dev/full", "--",
                                           sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert line == "collscope monitor: --json: cannot write '/dev/full': No space left on device"
    assert not marker.exists()


def test_samples_lost_mid_run_are_reported_and_the_run_does_not_exit_0(tmp_path, monkeypatch):
    from collscope.monitor.run import run_monitor
    from collscope.testing.faults import FAULT_ENV

    # The real writer's failure path: the file system fills up after the run record.
    monkeypatch.setenv(FAULT_ENV, "disk-full@0:1")
    path = tmp_path / "m.jsonl"
    out, err = io.StringIO(), io.StringIO()
    config = MonitorConfig(interval_s=0.1, duration_s=0.25, json=str(path), gpu_backend="none")
    assert run_monitor(config, out=out, err=err) == 1
    assert f"collscope monitor: sink --json {path} failed for some samples: " in err.getvalue()
    assert f"--json: writing '{path}' failed after 1 record(s), which it holds: No space " \
           "left on device" in err.getvalue()
    assert [json.loads(line)["kind"] for line in path.read_text().splitlines()] == ["run"]


@pytest.mark.parametrize("args, flag", [
    (["--", "collscope-no-such-command-xyz"], "COMMAND"),
    (["--prometheus", "{port}"], "--prometheus"),          # a port already taken
])
def test_a_refused_run_leaves_an_existing_jsonl_untouched(capsys, tmp_path, args, flag):
    import socket

    path = tmp_path / "m.jsonl"
    path.write_text('{"kind":"run"}\n')
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        argv = [arg.replace("{port}", port) for arg in args]
        line = usage_error_in_process(capsys, ["monitor", "--duration", "0.1", "--json",
                                               str(path), *argv])
    assert flag in line
    assert path.read_text() == '{"kind":"run"}\n'
