"""doctor warns when the Flight Recorder is off: a hang would leave nothing to analyse."""

from __future__ import annotations

from collscope.doctor.facts import TorchBuild
from tests.unit.doctor.test_checks import cpu_node, of


def _levels_and_titles(**overrides):
    return [(f.level, f.title) for f in of(cpu_node(**overrides), "env.flight-recorder")]


def test_torch_2_6_and_newer_record_without_the_variable():
    assert _levels_and_titles(env={}) == []          # cpu_node runs torch 2.13
    assert _levels_and_titles(env={"TORCH_FR_BUFFER_SIZE": "2000"}) == []


def test_older_or_unknown_torch_without_the_variable_warns_with_the_variables_to_set():
    for torch in (TorchBuild(version="2.4.1+cu121"), None):
        (finding,) = of(cpu_node(env={}, torch=torch), "env.flight-recorder")
        assert finding.level == "warn"
        assert "a hang will leave nothing to analyse" in finding.title
        assert "TORCH_FR_BUFFER_SIZE=2000" in finding.fix
        assert "TORCH_FR_DUMP_TEMP_FILE" in finding.fix and "collscope hang" in finding.fix


def test_a_zero_buffer_is_off_whatever_the_version():
    for name in ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        (level, title), = _levels_and_titles(env={name: "0"})
        assert level == "warn" and title.startswith(f"the Flight Recorder is off ({name}=0)")


def test_the_old_name_is_said():
    (level, title), = _levels_and_titles(env={"TORCH_NCCL_TRACE_BUFFER_SIZE": "500"})
    assert level == "info" and "old name" in title
