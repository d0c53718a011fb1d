"""Probes: tools run without a shell and under a timeout; missing tools and secrets handled."""

from __future__ import annotations

import json
import os
import time

from collscope.doctor.probes import (
    COMMANDS_FILE,
    ENV_FILE,
    HOST_FILE,
    ToolSpec,
    capture,
    capture_env,
    run_tool,
)
from tests.helpers import fake_tool


def test_missing_tool_is_a_fact(tmp_path):
    run, text = run_tool(ToolSpec("x.txt", ("no-such-tool-here",), "amd"), 5,
                         path=str(tmp_path))
    assert (run.status, text, run.path) == ("missing", None, None)


def test_ok_and_failing_tools(tmp_path):
    fake_tool(tmp_path, "rocm-smi", 'echo "args: $@"; echo "warn" >&2')
    run, text = run_tool(ToolSpec("r.txt", ("rocm-smi", "--showtopo", "; rm -rf /"), "amd"), 5,
                         path=str(tmp_path))
    # arguments arrive as given: no shell ever interprets them
    assert run.status == "ok" and text == "args: --showtopo ; rm -rf /\n"
    assert run.stderr == "warn" and run.returncode == 0
    fake_tool(tmp_path, "amd-smi", "echo partial; echo 'amdsmi: no permission' >&2; exit 3")
    run, text = run_tool(ToolSpec("a.txt", ("amd-smi", "static"), "amd"), 5, path=str(tmp_path))
    assert (run.status, run.returncode, text) == ("error", 3, "partial\n")
    assert run.stderr == "amdsmi: no permission"


def test_hung_tool_and_its_children_are_killed(tmp_path):
    # The tool starts a grandchild that holds the output pipe open, then hangs itself.
    fake_tool(tmp_path, "rocm-smi", "echo started; sleep 30 & sleep 30")
    started = time.monotonic()
    run, text = run_tool(ToolSpec("r.txt", ("rocm-smi",), "amd"), 0.5, path=str(tmp_path))
    assert time.monotonic() - started < 5
    assert run.status == "timeout" and "killed" in run.stderr
    assert text == "started\n"


def test_env_capture_filters_prefixes_and_secrets():
    text = capture_env({"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5", "HOME": "/root",
                        "UCX_API_KEY": "hunter2", "HSA_TOKEN": "x", "NCCL_PASSWORD": "y",
                        "HIP_VISIBLE_DEVICES": "0,1", "TORCH_NCCL_BLOCKING_WAIT": "1",
                        "GLOO_SOCKET_IFNAME": "eth0", "RCCL_X": "multi\nline"})
    assert text == ("GLOO_SOCKET_IFNAME=eth0\nHIP_VISIBLE_DEVICES=0,1\nNCCL_DEBUG=INFO\n"
                    "NCCL_IB_HCA=mlx5\nRCCL_X=multi\\nline\nTORCH_NCCL_BLOCKING_WAIT=1\n")
    assert "hunter2" not in text and capture_env({}) == ""


def test_env_capture_for_a_bundle_leaves_out_pass_and_pwd_names_and_url_passwords():
    # What --collect writes into env.txt (review item 11): *_PASS / *_PWD names left out,
    # a proxy URL's password hidden, ordinary NCCL/UCX variables kept as they are.
    text = capture_env({"NCCL_NET_PLUGIN_PASS": "sq1", "NCCL_DB_PWD": "sq2",
                        "UCX_PROXY": "http://u:sq3@proxy:3128", "NCCL_IB_HCA": "mlx5_0",
                        "UCX_TLS": "rc,cuda_copy", "NCCL_SOCKET_IFNAME": "eth0"})
    assert text == ("NCCL_IB_HCA=mlx5_0\nNCCL_SOCKET_IFNAME=eth0\nUCX_PROXY=http://u:<hidden>"
                    "@proxy:3128\nUCX_TLS=rc,cuda_copy\n")


def test_capture_records_every_tool_and_host_facts(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_tool(bin_dir, "ucx_info", "echo '# Library version: 1.16.0'")
    fake_tool(bin_dir, "rocm-smi", "sleep 30")
    specs = [ToolSpec("ucx_info-v.txt", ("ucx_info", "-v"), "ucx"),
             ToolSpec("rocm-smi--showtopo.txt", ("rocm-smi", "--showtopo"), "amd"),
             ToolSpec("nvidia-smi-topo-m.txt", ("nvidia-smi", "topo", "-m"), "nvidia")]
    started = time.monotonic()
    files = capture(tool_timeout_s=1.0, tools=specs, root=tmp_path / "empty",
                    environ={"NCCL_DEBUG": "WARN", "MY_SECRET": "s"}, path=str(bin_dir),
                    with_torch=False, extra=lambda: {"extra.txt": "x"})
    assert time.monotonic() - started < 6
    commands = json.loads(files[COMMANDS_FILE])
    assert {k: v["status"] for k, v in commands.items()} == {
        "ucx_info-v.txt": "ok", "rocm-smi--showtopo.txt": "timeout",
        "nvidia-smi-topo-m.txt": "missing"}
    assert files["ucx_info-v.txt"].startswith("# Library version")
    assert files[ENV_FILE] == "NCCL_DEBUG=WARN\n" and files["extra.txt"] == "x"
    host = json.loads(files[HOST_FILE])
    assert host["hostname"] == os.uname().nodename
    assert isinstance(host["memlock_soft"], int)
    assert "torch.json" not in files


def test_the_self_test_nccl_log_goes_into_the_bundle_with_secrets_hidden(monkeypatch):
    # NCCL_DEBUG=INFO echoes the variables it read; the bundle is meant to be shared.
    import collscope.doctor as doctor
    from collscope.doctor.config import DoctorConfig
    from collscope.doctor.probes import NCCL_LOG_FILE
    from collscope.doctor.selftest import SelfTestResult

    log = ("h:1:1 [0] NCCL INFO NCCL_API_TOKEN set by environment to sq1\n"
           "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n")
    monkeypatch.setattr(doctor, "run_selftest", lambda timeout_s: (SelfTestResult("ok"), log))
    monkeypatch.setattr(doctor.probes, "capture", lambda timeout_s, extra: extra())
    files = doctor.collect_local(DoctorConfig(), with_selftest=True)
    assert files[NCCL_LOG_FILE] == (
        "h:1:1 [0] NCCL INFO NCCL_API_TOKEN set by environment to <hidden>\n"
        "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n")
