"""Bad input to `collscope hang`: exit 2 with one line naming the file and what is wrong, no
traceback; a pickle holding a class is refused and never loaded."""

from __future__ import annotations

import pickle

import pytest

from collscope.errors import UsageError
from collscope.hang import analyse_paths
from collscope.hang.dumps import load_pickle
from tests.conftest import fixture_path
from tests.helpers import run_cli


class WritesAFile:
    """Unpickling this runs exec(), which writes ``marker``: what a hostile dump could do."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _one_line_exit_2(*args: str) -> str:
    proc = run_cli("hang", *args, timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    return proc.stderr


def test_a_pickle_holding_a_class_is_refused_and_never_loaded(tmp_path):
    marker = tmp_path / "ran"
    dump = tmp_path / "nccl_trace_rank_0"
    dump.write_bytes(pickle.dumps({"version": "2.10", "entries": [WritesAFile(str(marker))]}))
    # The planted object works: pickle's own loader runs it (so this test can fail).
    pickle.loads(dump.read_bytes())
    assert marker.read_text() == "ran"
    marker.unlink()
    line = _one_line_exit_2(str(dump))
    assert "holds a Python object of class builtins.exec" in line and "refused" in line
    assert str(dump) in line
    assert not marker.exists()
    with pytest.raises(ValueError, match="refused, never loaded"):
        load_pickle(dump.read_bytes())
    assert not marker.exists()


def test_a_truncated_pickle_is_named(tmp_path):
    whole = fixture_path("flight-recorder", "gloo_skip_4ranks", "nccl_trace_rank_0").read_bytes()
    cut = tmp_path / "nccl_trace_rank_0"
    cut.write_bytes(whole[: len(whole) // 2])
    line = _one_line_exit_2(str(cut))
    assert "truncated pickle" in line and str(cut) in line


def test_a_file_that_is_not_a_dump_is_named(tmp_path):
    text = tmp_path / "notes_3.txt"
    text.write_text("step 5 loss 2.31\n")
    assert "not a dump" in _one_line_exit_2(str(text))
    other = tmp_path / "config.json"
    other.write_text('{"lr": 0.1}')
    assert "not a Flight Recorder dump" in _one_line_exit_2(str(other))


def test_a_folder_without_dumps_says_so(tmp_path):
    (tmp_path / "readme.txt").write_text("nothing here")
    assert "no Flight Recorder dump or ncclras output" in _one_line_exit_2(str(tmp_path))


def test_dumps_of_two_jobs_mixed_are_refused():
    line = _one_line_exit_2(str(fixture_path("flight-recorder", "gloo_skip_4ranks")),
                            str(fixture_path("flight-recorder", "nvrx_gpu_error_2nd")))
    assert "two different jobs mixed" in line


def test_two_different_dumps_of_one_rank_are_refused(tmp_path):
    with pytest.raises(UsageError, match="two different jobs mixed"):
        analyse_paths([fixture_path("flight-recorder", "gloo_skip_4ranks", "nccl_trace_rank_2"),
                       fixture_path("flight-recorder", "gloo_dead_4ranks", "nccl_trace_rank_2"),
                       ])


def test_a_missing_path_and_a_bad_hosts_file_name_their_flag(tmp_path):
    assert "does not exist" in _one_line_exit_2(str(tmp_path / "nope"))
    hosts = tmp_path / "hosts"
    hosts.write_text("zero node-01\n")
    line = _one_line_exit_2(str(fixture_path("flight-recorder", "gloo_skip_4ranks")),
                            "--hosts", str(hosts))
    assert line.startswith("collscope hang: --hosts:")


def test_hosts_file_names_the_culprits_host_in_the_verdict(tmp_path):
    hosts = tmp_path / "hosts.json"
    hosts.write_text('{"0": "node-01", "1": "node-01", "2": "node-02", "3": "node-02"}')
    out = tmp_path / "hang.jsonl"
    proc = run_cli("hang", str(fixture_path("flight-recorder", "gloo_skip_4ranks")),
                   "--hosts", str(hosts), "--json", str(out), timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("HANG: rank 2 (node-02) never entered all_reduce #9")
    import json

    verdict = json.loads(out.read_text().splitlines()[-1])
    assert verdict["hosts"] == {"0": "node-01", "1": "node-01", "2": "node-02", "3": "node-02"}
