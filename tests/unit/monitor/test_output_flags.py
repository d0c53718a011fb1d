"""monitor's output flags are checked before anything runs, and {host}/{node} mean something
everywhere (findings 1 and 20 b, c)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from collscope.errors import UsageError
from collscope.monitor.run import output_path
from tests.helpers import usage_error_in_process


def job(world, local, node, launcher="torchrun"):
    return SimpleNamespace(world_size=world, local_world_size=local, node_rank=node,
                           launcher=launcher)


@pytest.mark.parametrize("path, launch, expected", [
    ("mon-{host}-{node}.jsonl", None, "mon-gpu07-0.jsonl"),          # outside a job: node 0
    ("mon-{node}.jsonl", job(8, 8, None, "openmpi"), "mon-0.jsonl"),  # one node: node 0
    ("mon-{node}.jsonl", job(16, 8, 1), "mon-1.jsonl"),
    ("mon-{host}.jsonl", job(16, 8, None, "openmpi"), "mon-gpu07.jsonl"),
    ("a{{b}}.jsonl", None, "a{b}.jsonl"),                            # literal braces
    ("a{{b}}.jsonl", job(16, 8, 1), "a{b}.node1.jsonl"),
])
def test_placeholders(path, launch, expected):
    assert output_path("--json", path, "gpu07", launch) == expected


def test_node_in_a_multi_node_job_without_a_node_rank_is_refused():
    with pytest.raises(UsageError, match=r"^--summary-json: \{node\} needs the node rank, "
                                         r"which openmpi does not give; use \{host\}"):
        output_path("--summary-json", "s-{node}.json", "h", job(16, 8, None, "openmpi"))


@pytest.mark.parametrize("path", ["{bogus}", "m-{rank}.jsonl", "{}", "a{", "a}", "{host:>9}",
                                  "{host!r}", "{host.upper}", "{node[0]}"])
def test_unknown_placeholders_name_the_flag_and_the_accepted_ones(path):
    with pytest.raises(UsageError) as caught:
        output_path("--json", path, "h", None)
    message = str(caught.value)
    assert message.startswith(f"--json: {path!r}: only the placeholders {{host}}")
    assert "{node}" in message


@pytest.mark.parametrize("flag, path, needle", [
    ("--summary-json", "{tmp}/no-such-folder/s.json", "does not exist"),
    ("--summary-json", "{tmp}", "it is a folder"),
    ("--json", "{tmp}/no-such-folder/m.jsonl", "does not exist"),
    ("--summary-json", "{bogus}.json", "only the placeholders"),
])
def test_bad_output_exits_2_before_the_command_runs(capsys, tmp_path, flag, path, needle):
    marker = tmp_path / "ran"
    path = path.replace("{tmp}", str(tmp_path))
    line = usage_error_in_process(capsys, [
        "monitor", "--interval", "0.1", flag, path, "--",
        sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert line.startswith(f"collscope monitor: {flag}: ") and needle in line, line
    assert not marker.exists()      # the command never started


def test_other_local_ranks_refuse_a_bad_output_too(capsys, tmp_path, monkeypatch):
    # They only run the command, but a bad flag stops every rank of the job alike.
    for name, value in {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2",
                        "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}.items():
        monkeypatch.setenv(name, value)
    marker = tmp_path / "ran"
    line = usage_error_in_process(capsys, [
        "monitor", "--summary-json", str(tmp_path / "no" / "s.json"), "--",
        sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert "--summary-json" in line and not marker.exists()
