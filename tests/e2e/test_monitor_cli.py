"""`collscope monitor` as a user runs it: recording, Prometheus, wrapping, Ctrl-C, bad input."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.request
from functools import lru_cache

import psutil
import pytest

from tests.helpers import REPO, cli_env, read_records, run_cli, usage_error

LOOPBACK_BYTES = 200 * 1000 * 1000

# Runs the monitor and a loopback TCP transfer of a known size side by side. In a private
# network namespace (when this machine allows one) the loopback carries nothing else, so the
# recorded bytes can be compared exactly; otherwise it uses the host's loopback.
LOOPBACK_DRIVER = r"""
import json, socket, subprocess, sys, threading, time
jsonl, report, total, netns = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
if netns:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=10)
monitor = subprocess.Popen(
    [sys.executable, "-m", "collscope", "monitor", "--duration", "3", "--interval", "0.5",
     "--json", jsonl], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
deadline = time.monotonic() + 30
while True:  # the first sample proves the baseline reading is behind us
    try:
        text = open(jsonl).read()
    except FileNotFoundError:
        text = ""
    if '"kind":"sample"' in text:
        break
    if monitor.poll() is not None or time.monotonic() > deadline:
        monitor.kill()
        raise SystemExit("monitor did not start: " + monitor.stderr.read())
    time.sleep(0.02)
server = socket.create_server(("127.0.0.1", 0))
received = []
def drain():
    connection, _ = server.accept()
    count = 0
    while True:
        chunk = connection.recv(1 << 20)
        if not chunk:
            break
        count += len(chunk)
    received.append(count)
reader = threading.Thread(target=drain)
reader.start()
started = time.time()
payload, sent = b"x" * (1 << 20), 0
with socket.create_connection(server.getsockname()) as client:
    while sent < total:
        piece = payload[: min(len(payload), total - sent)]
        client.sendall(piece)
        sent += len(piece)
reader.join()
finished = time.time()
out, err = monitor.communicate(timeout=60)
json.dump({"sent": sent, "received": received[0], "started": started, "finished": finished,
           "rc": monitor.returncode, "stdout": out, "stderr": err, "netns": netns},
          open(report, "w"))
"""


@lru_cache(maxsize=1)
def private_netns_prefix() -> tuple[str, ...]:
    """``unshare`` arguments for a private network namespace, or () where not permitted."""
    try:
        probe = subprocess.run(["unshare", "--net", "--map-root-user", "true"],
                               capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return ("unshare", "--net", "--map-root-user") if probe.returncode == 0 else ()


@pytest.mark.serial   # samples on a clock
def test_records_cpu_memory_interfaces_and_the_bytes_sent_over_loopback(tmp_path):
    jsonl, report = tmp_path / "f.jsonl", tmp_path / "report.json"
    prefix = private_netns_prefix()
    proc = subprocess.run([*prefix, sys.executable, "-c", LOOPBACK_DRIVER, str(jsonl),
                           str(report), str(LOOPBACK_BYTES), "1" if prefix else "0"],
                          capture_output=True, text=True, timeout=90, env=cli_env(), cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(report.read_text())
    assert result["rc"] == 0, result["stderr"]
    assert result["received"] == LOOPBACK_BYTES

    records = read_records(jsonl)
    run, samples = records[0], records[1:]
    assert run["kind"] == "run" and run["command"] == "monitor"
    assert run["extra"]["interval_s"] == 0.5 and run["schema_version"] >= 1
    assert 4 <= len(samples) <= 7 and all(s["kind"] == "sample" for s in samples)
    for sample in samples:
        metrics = sample["metrics"]
        assert {"cpu.percent", "mem.used_bytes", "mem.total_bytes", "net.lo.rx_bytes_per_s",
                "net.lo.tx_bytes_per_s"} <= set(metrics), sorted(metrics)
        assert 0 <= metrics["cpu.percent"] <= 100
        assert 0 < metrics["mem.used_bytes"] < metrics["mem.total_bytes"]
        assert sample["host"] == run["hosts"][0] and isinstance(sample["ts"], float)
    assert samples[0]["ts"] < result["started"] and result["finished"] < samples[-1]["ts"], \
        "the transfer must fall inside the sampled window"

    # Integrate the recorded rate over each sample's interval (the first from the baseline).
    recorded, previous = 0.0, run["started_at"]
    for sample in samples:
        recorded += sample["metrics"]["net.lo.rx_bytes_per_s"] * (sample["ts"] - previous)
        previous = sample["ts"]
    error = abs(recorded - LOOPBACK_BYTES) / LOOPBACK_BYTES
    print(f"\nloopback: sent {LOOPBACK_BYTES} B, recorded {recorded:.0f} B "
          f"({error:.2%} off; private netns: {bool(prefix)})")
    assert error < 0.10
    assert "net.lo" in result["stdout"]   # summary and compact lines when stdout is a pipe


def read_until(stream, pattern: str, timeout: float = 20.0) -> re.Match:
    """Read a child's pipe (bytes) until ``pattern`` appears, without blocking forever."""
    deadline, buffer = time.monotonic() + timeout, b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.1)
        if ready:
            chunk = os.read(stream.fileno(), 4096)
            if not chunk:
                break
            buffer += chunk
            match = re.search(pattern, buffer.decode(errors="replace"))
            if match:
                return match
    raise AssertionError(f"{pattern!r} not seen in {buffer!r}")


@pytest.mark.serial   # samples on a clock
def test_prometheus_endpoint_scraped_with_plain_http_get(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "collscope", "monitor", "--duration", "2.5",
                             "--interval", "0.3", "--prometheus", "127.0.0.1:0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=cli_env(), cwd=REPO)
    try:
        url = read_until(proc.stderr, r"http://127\.0\.0\.1:\d+/metrics").group(0)
        deadline = time.monotonic() + 10
        while True:
            with urllib.request.urlopen(url, timeout=5) as response:
                body = response.read().decode()
                content_type = response.headers["Content-Type"]
            if body or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert content_type.startswith("text/plain; version=0.0.4")
    host = re.search(r'collscope_cpu_percent\{host="([^"]+)"\}', body).group(1)
    for name in ("collscope_cpu_percent", "collscope_memory_used_bytes",
                 "collscope_memory_total_bytes", "collscope_net_rx_bytes_per_second",
                 "collscope_net_tx_bytes_per_second", "collscope_sample_timestamp_seconds"):
        assert f"# TYPE {name} gauge" in body, name
        assert f"# HELP {name} " in body, name
    total = float(re.search(r"^collscope_memory_total_bytes\{[^}]*\} (\S+)$", body,
                            re.M).group(1))
    assert total == psutil.virtual_memory().total
    cpu = float(re.search(r"^collscope_cpu_percent\{[^}]*\} (\S+)$", body, re.M).group(1))
    assert 0 <= cpu <= 100
    lo = re.search(rf'^collscope_net_rx_bytes_per_second\{{iface="lo",host="{re.escape(host)}"'
                   r"\} (\S+)$", body, re.M)
    assert lo and float(lo.group(1)) >= 0
    assert "gpu" not in body   # no GPU here: absent, not 0


@pytest.mark.serial   # counts the samples of a timed run
def test_wrapping_propagates_the_exit_code_and_writes_the_summary(tmp_path):
    summary_path = tmp_path / "s.json"
    proc = run_cli("monitor", "--interval", "0.2", "--summary-json", str(summary_path), "--",
                   sys.executable, "-c", "import sys, time; time.sleep(0.5); sys.exit(7)",
                   timeout=60)
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout == ""                           # the command owns stdout
    assert "collscope monitor summary" in proc.stderr and "cpu.percent" in proc.stderr
    summary = json.loads(summary_path.read_text())
    assert summary["exit_code"] == 7 and summary["command"][-1].endswith("sys.exit(7)")
    assert summary["samples"] >= 2
    assert summary["metrics"]["proc.count"]["peak"] >= 1
    assert summary["metrics"]["proc.rss_bytes"]["peak"] > 1_000_000


@pytest.mark.serial   # bounds how soon Ctrl-C ends it
def test_ctrl_c_is_forwarded_and_the_child_is_gone(tmp_path):
    pid_file = tmp_path / "pid"
    child = ("import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); "
             "time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-m", "collscope", "monitor", "--interval", "0.2",
                             "--", sys.executable, "-c", child, str(pid_file)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=REPO)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    child_pid = int(pid_file.read_text())
    assert child_pid in {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert not psutil.pid_exists(child_pid)
    assert "collscope monitor summary" in err


@pytest.mark.serial   # bounds how soon Ctrl-C ends it
def test_ctrl_c_without_a_command_stops_cleanly(tmp_path):
    jsonl = tmp_path / "m.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "collscope", "monitor", "--interval", "0.2",
                             "--json", str(jsonl)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env(), cwd=REPO)
    deadline = time.monotonic() + 30
    while not (jsonl.exists() and '"kind":"sample"' in jsonl.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert [r["kind"] for r in read_records(jsonl)][:2] == ["run", "sample"]
    assert "collscope monitor summary" in out


def launcher_env(rank: int, local_rank: int, world: int, local_world: int, node: int):
    return cli_env(RANK=str(rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(local_world), GROUP_RANK=str(node),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")


@pytest.mark.serial   # samples on a clock
def test_under_a_launcher_only_local_rank_0_samples(tmp_path):
    jsonl = tmp_path / "m.jsonl"
    other = run_cli("monitor", "--json", str(jsonl), "--", sys.executable, "-c",
                    "import os, sys; sys.exit(int(os.environ['LOCAL_RANK']) + 2)",
                    env=launcher_env(1, 1, 2, 2, 0), timeout=60)
    assert other.returncode == 3 and other.stdout == "" and other.stderr == ""
    assert not jsonl.exists()
    idle = run_cli("monitor", "--json", str(jsonl), env=launcher_env(1, 1, 2, 2, 0))
    assert idle.returncode == 0 and not jsonl.exists()

    # local rank 0 of node 1 in a 2-node job: samples, and tags its file with the node
    first = run_cli("monitor", "--interval", "0.2", "--duration", "0.5", "--json", str(jsonl),
                    env=launcher_env(2, 0, 4, 2, 1), timeout=60)
    assert first.returncode == 0, first.stderr
    records = read_records(tmp_path / "m.node1.jsonl")
    assert records[0]["launcher"] == "torchrun" and records[0]["extra"]["node_rank"] == 1
    assert records[0]["nodes"] == 2 and records[0]["world_size"] == 4
    assert records[1]["host"] == records[0]["hosts"][0]


@pytest.mark.parametrize("args, flag", [
    (["--interval", "0"], "--interval"),
    (["--interval", "fast"], "--interval"),
    (["--duration", "-3"], "--duration"),
    (["--prometheus", "localhost"], "--prometheus"),
    (["--prometheus", "99999"], "--prometheus"),
    (["--gpu-backend", "intel"], "--gpu-backend"),
    (["--gpu-backend", "amd"], "--gpu-backend"),          # no AMD GPU on this machine
    (["--json", "/nonexistent-dir/m.jsonl"], "--json"),
    (["--", "collscope-no-such-command-xyz"], "COMMAND"),
    (["--"], "COMMAND"),
])
def test_bad_input_exits_2_with_one_line(args, flag):
    if args[:2] == ["--gpu-backend", "amd"]:
        from collscope.hw.amd import AmdBackend

        if AmdBackend().available():
            pytest.skip("this machine has AMD GPUs")
    proc = run_cli("monitor", "--duration", "0.2", *args, timeout=60)
    usage_error(proc, flag)
    assert proc.stdout == ""


def test_help_shows_usage_examples_and_metric_names():
    proc = run_cli("monitor", "--help")
    assert proc.returncode == 0
    for text in ("--interval", "--duration", "--json", "--prometheus [HOST:]PORT",
                 "--summary-json", "-- CMD", "examples", "torchrun", "srun",
                 "net.<iface>.rx_bytes_per_s", "gpu.<i>.util_percent", "never 0",
                 "exit codes"):
        assert text in proc.stdout, text


def test_monitor_module_import_does_not_import_torch_or_gpu_libraries():
    code = ("import sys; import collscope.cli.monitor, collscope.monitor, collscope.hw; "
            "print(sorted(m for m in ('torch', 'amdsmi', 'pynvml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=cli_env(), cwd=REPO, check=True).stdout.strip()
    assert out == "[]"


@pytest.mark.serial   # counts the samples of a timed run
def test_sampler_package_is_usable_from_a_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import json, time\n"
        "from collscope.monitor import Sampler\n"
        "records = []\n"
        "with Sampler(interval=0.1, sinks=[records.append]) as sampler:\n"
        "    time.sleep(0.35)\n"
        "print(json.dumps({'n': len(records), 'keys': sorted(records[-1].metrics),\n"
        "                  'mean': sampler.summary().metrics['cpu.percent'].mean}))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=cli_env(), cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["n"] >= 3 and "cpu.percent" in data["keys"] and data["mean"] >= 0

