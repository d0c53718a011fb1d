"""doctor warns when the Flight Recorder is off: a hang would leave nothing to analyse."""

from __future__ import annotations

from collscope.doctor.facts import TorchBuild
from tests.helpers import cpu_node, findings_of


def _levels_and_titles(**overrides):
    return [(f.level, f.title) for f in findings_of(cpu_node(**overrides), "env.flight-recorder")]


def test_torch_2_6_and_newer_record_without_the_variable():
    assert _levels_and_titles(env={}) == []          # cpu_node runs torch 2.13
    assert _levels_and_titles(env={"TORCH_FR_BUFFER_SIZE": "2000"}) == []


def test_older_or_unknown_torch_without_the_variable_warns_with_the_variables_to_set():
    for torch in (TorchBuild(version="2.4.1+cu121"), None):
        (finding,) = findings_of(cpu_node(env={}, torch=torch), "env.flight-recorder")
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


def _findings(version: str, backends: list[str], env: dict[str, str]):
    return findings_of(cpu_node(env=env, torch=TorchBuild(version=version, backends=backends)),
                       "env.flight-recorder")


def test_the_names_given_are_the_ones_the_node_s_torch_reads():
    """torch 2.6 reads TORCH_NCCL_TRACE_BUFFER_SIZE; TORCH_FR_BUFFER_SIZE does nothing there
    (and its NCCL ring is on by default, so that is the one finding)."""
    (ignored,) = _findings("2.6.0+rocm6.2", ["gloo", "nccl"], {"TORCH_FR_BUFFER_SIZE": "2000"})
    assert ignored.level == "warn" and ignored.title == \
        "TORCH_FR_BUFFER_SIZE is not read by torch 2.6.0+rocm6.2"
    assert "export TORCH_NCCL_TRACE_BUFFER_SIZE=2000" in ignored.fix
    assert "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=" in ignored.fix and "TORCH_FR" not in ignored.fix


def test_unset_per_release_and_backend():
    (warn,) = _findings("2.5.1", ["gloo", "nccl"], {})              # 2.5: NCCL off by default
    assert warn.level == "warn" and "TORCH_NCCL_TRACE_BUFFER_SIZE" in warn.title
    assert _findings("2.6.0", ["gloo", "nccl"], {}) == []             # NCCL on by default
    (info,) = _findings("2.6.0+cpu", ["gloo"], {})                    # gloo: no recorder
    assert info.level == "info" and "no Flight Recorder for gloo" in info.title
    (warn,) = _findings("2.9.1+cpu", ["gloo"], {})                    # gloo off until 2.11
    assert "TORCH_FR_BUFFER_SIZE" in warn.title and "TORCH_FR_DUMP_TEMP_FILE" in warn.fix
    assert _findings("2.13.0+cpu", ["gloo"], {}) == []
