"""gpu.idle-memory: GPU memory held while the GPU is idle, from every GPU tool's table."""

from __future__ import annotations

from collscope.doctor.facts import facts_from
from tests.conftest import OWN_FIXTURES
from tests.helpers import findings_of

OWN = OWN_FIXTURES / "tool-outputs"


def test_memory_held_while_idle_names_the_gpu_and_the_process() -> None:
    facts = facts_from({"nvidia-smi.txt":
                        (OWN / "nvidia-smi_default_table_own_2gpu_memory_held.txt").read_text()})
    (finding,) = findings_of(facts, "gpu.idle-memory")
    assert finding.level == "warn"
    # 40961 MiB = 40.0 GiB of 143771 MiB = 140 GiB; GPU 1 (1 MiB) is not flagged
    assert finding.title == "GPU memory held while idle: GPU 0: 40 GiB in use of 140 GiB"
    assert "pid 424242 /usr/bin/python3 on GPU 0 (40 GiB)" in finding.detail
    assert "nvidia-smi --query-compute-apps" in finding.fix and "nvidia-smi -r -i N" in \
        finding.fix and "kill PID" in finding.fix


def test_memory_held_with_no_process_is_a_left_over_context() -> None:
    facts = facts_from({"amd-smi.txt": (OWN / "amd-smi_default_table_own_2gpu.txt").read_text()})
    (finding,) = findings_of(facts, "gpu.idle-memory")
    # GPU 0: 50012 MB (49 GiB) at 0%; GPU 1 is busy (97%) with its 60 GB, so it is fine
    assert finding.title == "GPU memory held while idle: GPU 0: 49 GiB in use of 192 GiB"
    assert "a context left by a hung or killed job" in finding.detail
    assert "amd-smi reset -G -g N" in finding.fix and "rocm-smi --showpids" in finding.fix


def test_memory_held_from_monitor_and_from_percentages() -> None:
    facts = facts_from({"amd-smi-monitor.txt": (OWN / "amd-smi_monitor_own_2gpu.txt").read_text()})
    (finding,) = findings_of(facts, "gpu.idle-memory")
    assert finding.title == "GPU memory held while idle: GPU 0: 24 GiB in use of 192 GiB"
    concise = (OWN / "rocm-smi_concise_own_rocm61_2gpu.txt").read_text()
    assert findings_of(facts_from({"rocm-smi.txt": concise}), "gpu.idle-memory") == []  # 37% at 88%
    held = concise.replace("0%    0%", "45%    0%")                          # GPU 1: 45% at 0%
    (finding,) = findings_of(facts_from({"rocm-smi.txt": held}), "gpu.idle-memory")
    assert finding.title == "GPU memory held while idle: GPU 1: 45% in use"
