"""`collscope watch` bad input: exit 2 with one line naming the flag, before the command runs
(the command here would leave a file if it ran)."""

from __future__ import annotations

import pytest

from tests.helpers import run_cli, usage_error_in_process


@pytest.mark.parametrize("args, needle", [
    (["--interval", "0"], "--interval: 0 is not an interval"),
    (["--hang-after", "0.5"], "--hang-after: 0.5 is not a stall threshold"),
    (["--on-hang", "stop"], "--on-hang"),
    (["--prometheus", "abc"], "--prometheus: 'abc' is not [HOST:]PORT"),
    (["--json", "/nonexistent/w.jsonl"], "--json: cannot write '/nonexistent/w.jsonl'"),
    (["--json", "-"], "--json: '-' (stdout) cannot be used"),
    (["--dump-dir", "/proc/dumps"], "--dump-dir: cannot write into '/proc/dumps'"),
])
def test_bad_flags_exit_2_with_one_line(capsys, tmp_path, args, needle):
    marker = tmp_path / "ran"
    line = usage_error_in_process(capsys, ["watch", *args, "--", "touch", str(marker)])
    assert needle in line and not marker.exists()


@pytest.mark.parametrize("command, needle", [
    ([], "COMMAND: nothing to run"), (["--"], "COMMAND: nothing to run"),
    (["--", "no-such-program-here"], "COMMAND: 'no-such-program-here' not found on PATH")])
def test_a_missing_command_exits_2(capsys, command, needle):
    assert needle in usage_error_in_process(capsys, ["watch", *command])


def test_help_has_examples_and_exit_codes():
    out = run_cli("watch", "--help", timeout=60).stdout
    assert "collscope watch -- torchrun --nproc-per-node 8 train.py" in out
    assert "124 when --on-hang kill ended" in out and "docs/watch.md" in out
