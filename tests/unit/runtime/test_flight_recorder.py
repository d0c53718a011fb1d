"""The Flight Recorder's names per torch version, and the probe of the running torch, with
stand-ins shaped like torch._C._distributed_c10d of each API (no torch needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from collscope.runtime import flight_recorder as fr


def _json_dump(**kwargs):
    assert kwargs == {"includeCollectives": True, "onlyActive": False}
    return b'{"entries": []}'


OLD_NCCL_BUILD = SimpleNamespace(_dump_nccl_trace=lambda: b"pickle",
                                 _dump_nccl_trace_json=_json_dump)      # torch 2.5-2.7, CUDA/ROCm
OLD_CPU_BUILD = SimpleNamespace()                                      # torch 2.5-2.7, CPU wheel
NEW_BUILD = SimpleNamespace(_dump_fr_trace=lambda: b"pickle", _dump_fr_trace_json=_json_dump,
                            _dump_nccl_trace=lambda: b"old", _dump_nccl_trace_json=_json_dump)


@pytest.mark.parametrize("version, buffer, dump_json, gloo, unset_on", [
    ("2.5.1+rocm6.2", "TORCH_NCCL_TRACE_BUFFER_SIZE", "_dump_nccl_trace_json", False, ()),
    ("2.6.0", "TORCH_NCCL_TRACE_BUFFER_SIZE", "_dump_nccl_trace_json", False, ("nccl",)),
    ("2.7.1+cu126", "TORCH_NCCL_TRACE_BUFFER_SIZE", "_dump_nccl_trace_json", False, ("nccl",)),
    ("2.8.0", "TORCH_FR_BUFFER_SIZE", "_dump_fr_trace_json", True, ("nccl",)),
    ("2.9.1+cpu", "TORCH_FR_BUFFER_SIZE", "_dump_fr_trace_json", True, ("nccl",)),
    ("2.13.0+cpu", "TORCH_FR_BUFFER_SIZE", "_dump_fr_trace_json", True, ("nccl", "gloo")),
    ("2.15.0", "TORCH_FR_BUFFER_SIZE", "_dump_fr_trace_json", True, ("nccl", "gloo")),
])
def test_each_supported_release_names_its_api(version, buffer, dump_json, gloo, unset_on):
    row = fr.release(version)
    assert row is not None and fr.supported(version)
    assert (row.buffer_variable, row.dump_json, row.records("gloo")) == (buffer, dump_json, gloo)
    assert row.records("nccl") and row.records("cuda:nccl,cpu:gloo")
    assert row.on_by_default == unset_on
    assert row.dump_on_timeout_variable == "TORCH_NCCL_DUMP_ON_TIMEOUT"


def test_versions_outside_the_range():
    assert fr.release("2.4.1") is None and not fr.supported("2.4.1")
    assert fr.release(None) is None and fr.release("nightly") is None
    assert not fr.supported("2.16.0") and fr.release("2.16.0") is fr.RELEASES[-1]


def test_old_nccl_build_is_read_under_the_old_names():
    recorder = fr.probe("nccl", OLD_NCCL_BUILD, "2.6.0+rocm6.2")
    assert recorder.available and recorder.release.dump_json == "_dump_nccl_trace_json"
    assert recorder.dump_json() == b'{"entries": []}'
    assert recorder.dump_pickle() == b"pickle"


def test_gloo_before_2_8_has_no_recorder_and_says_why():
    for build in (OLD_NCCL_BUILD, OLD_CPU_BUILD):
        recorder = fr.probe("gloo", build, "2.6.0")
        assert not recorder.available and recorder.dump_json is None
    assert "nccl only, not gloo (gloo from torch 2.8)" in \
        fr.probe("gloo", OLD_NCCL_BUILD, "2.6.0").missing
    assert "has no Flight Recorder dump" in fr.probe("gloo", OLD_CPU_BUILD, "2.6.0").missing


def test_the_probe_believes_the_functions_over_the_version_number():
    """A build that has the new names records gloo, whatever its version string says."""
    recorder = fr.probe("gloo", NEW_BUILD, "2.7.0a0+git1234")
    assert recorder.available and recorder.release.dump_json == "_dump_fr_trace_json"
    assert recorder.dump_pickle() == b"pickle"


def test_the_variable_switched_on_is_the_one_the_torch_reads():
    old, new = fr.release("2.6.0"), fr.release("2.13.0")
    assert fr.switch_on({}, old, 256) == {"TORCH_NCCL_TRACE_BUFFER_SIZE": "256"}
    assert fr.switch_on({}, new, 256) == {"TORCH_FR_BUFFER_SIZE": "256"}
    # a user's setting that this torch reads is kept (the alias too: 2.8+ reads it)
    assert fr.switch_on({"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}, new, 256) == {}
    assert fr.buffer_setting({"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}, new) == \
        ("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000")
    # ... one it does not read is not a setting: torch 2.6 ignores TORCH_FR_BUFFER_SIZE
    env = {"TORCH_FR_BUFFER_SIZE": "5000"}
    assert fr.buffer_setting(env, old) == (None, None)
    assert fr.ignored_buffer_variables(env, old) == ["TORCH_FR_BUFFER_SIZE"]
    assert fr.switch_on(env, old, 256) == {"TORCH_NCCL_TRACE_BUFFER_SIZE": "5000"}
    assert fr.switch_on({}, None, 256) == {}


def test_table_rows_cover_the_range_once():
    rows = fr.table_rows()
    assert [r["torch"] for r in rows] == ["2.5", "2.6-2.7", "2.8-2.10", "2.11+"]
    assert rows[0]["on when unset"] == "none" and rows[-1]["records"] == "nccl, gloo"


def test_ring_entries_as_the_torch_reads_them():
    old, mid, new = fr.release("2.5.1"), fr.release("2.9.0"), fr.release("2.13.0")
    assert fr.ring_entries({}, old, "nccl") == 0          # 2.5: off unless set
    assert fr.ring_entries({}, fr.release("2.6.0"), "nccl") == 2000
    assert fr.ring_entries({}, mid, "gloo") == 0 and fr.ring_entries({}, mid, "nccl") == 2000
    assert fr.ring_entries({}, new, "gloo") == 2000
    assert fr.ring_entries({"TORCH_FR_BUFFER_SIZE": "0"}, new, "gloo") == 0
    assert fr.ring_entries({"TORCH_FR_BUFFER_SIZE": "lots"}, new, "gloo") is None
    assert fr.ring_entries({"TORCH_FR_BUFFER_SIZE": "500"}, old, "nccl") == 0   # not read


def test_running_release_follows_the_functions():
    assert fr.running_release(OLD_NCCL_BUILD, "2.6.0").dump_json == "_dump_nccl_trace_json"
    assert fr.running_release(NEW_BUILD, "2.7.0a0").dump_json == "_dump_fr_trace_json"
    assert fr.running_release(OLD_CPU_BUILD, "2.6.0") is fr.release("2.6.0")
    assert fr.running_release(OLD_CPU_BUILD, "2.4.0") is None
