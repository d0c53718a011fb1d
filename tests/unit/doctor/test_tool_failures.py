"""A GPU tool that is there but fails: one finding per problem, the most specific one.

The fakes behave as the real tools do: nvidia-smi prints NVML's failure on stdout and exits
with NVML's code (9 driver not loaded, 18 driver/library mismatch); rocm-smi logs "Driver not
initialized" to stderr and exits 0; a tool may also exit non-zero printing something doctor
cannot read, or hang.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from collscope.doctor import diagnose, probes
from collscope.doctor.checks import Finding
from collscope.doctor.vendor_output import VENDOR_OUTPUT_FILE
from collscope.hw import capture
from tests.helpers import FAKE_VENDOR, cli_env, fake_tool, run_cli

NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.")


def _tools_findings(tmp_path: Path, tools: dict[str, str], group: str,
                    timeout_s: float = 5.0) -> list[Finding]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in tools.items():
        fake_tool(bin_dir, name, body)
    specs = [t for t in probes.TOOLS if t.group == group]
    capture = probes.capture(timeout_s, tools=specs, root=tmp_path / "empty", environ={},
                             path=str(bin_dir), with_torch=False)
    _, findings = diagnose(capture)
    return [f for f in findings if f.area == "tools"]


def test_nvidia_smi_without_its_driver_is_one_failure_with_its_exit_code(tmp_path):
    found = _tools_findings(tmp_path, {"nvidia-smi": f"echo \"{NO_DRIVER}\"; exit 9"}, "nvidia")
    (finding,) = found       # not also "failed (exit 9)" under tools.availability
    assert (finding.id, finding.level) == ("tools.gpu-tool-failed", "fail")
    assert finding.title == ("nvidia-smi-query-gpu.csv, nvidia-smi-topo-m.txt: nvidia-smi "
                             "could not reach the NVIDIA driver")
    assert finding.detail.startswith("`nvidia-smi --query-gpu=index,name,memory.total,"
                                     "memory.us... --format=csv,noheader,nounits` and "
                                     "`nvidia-smi topo -m` each exited 9")
    assert "each exited 9, printing the tool's error instead of its output" in finding.detail
    assert NO_DRIVER in finding.detail and "nvrm" in finding.fix


def test_nvml_mismatch_names_the_first_line_of_stderr(tmp_path):
    body = ("echo 'Failed to initialize NVML: Driver/library version mismatch'; "
            "echo 'NVML library version: 570.86' >&2; exit 18")
    (finding,) = _tools_findings(tmp_path, {"nvidia-smi": body}, "nvidia")
    assert finding.id == "tools.gpu-tool-failed"
    assert "each exited 18" in finding.detail
    assert 'First line of stderr: "NVML library version: 570.86".' in finding.detail


def test_rocm_smi_failure_on_stderr_is_found(tmp_path):
    # Before: exit 0 with nothing on stdout gave no finding at all.
    body = "echo 'ERROR:root:Driver not initialized (amdgpu not found in modules)' >&2"
    found = _tools_findings(tmp_path, {"rocm-smi": body, "amd-smi": "exit 0",
                                       "rocminfo": "exit 0"}, "amd")
    (finding,) = found
    assert (finding.id, finding.level) == ("tools.gpu-tool-failed", "fail")
    assert finding.title.endswith(": the AMD GPU tool could not reach the amdgpu driver")
    assert finding.title.count("rocm-smi") == 4          # its four commands, one finding
    assert "each exited 0, printing the tool's error on stderr" in finding.detail
    assert "modprobe amdgpu" in finding.fix


def test_failing_tool_with_unreadable_output_is_one_finding_and_hides_secrets(tmp_path):
    body = "echo '@@ garbage @@'; echo 'amdsmi: bad config API_TOKEN=hunter2 here' >&2; exit 2"
    found = _tools_findings(tmp_path, {"amd-smi": body, "rocm-smi": "exit 0",
                                       "rocminfo": "exit 0"}, "amd")
    (finding,) = found       # not also three tools.unrecognised warnings
    assert (finding.id, finding.level) == ("tools.availability", "warn")
    assert finding.title == ("`amd-smi metric --json`, `amd-smi static --json` and "
                             "`amd-smi topology --json` failed (exit 2)")
    assert finding.detail.startswith("amdsmi: bad config API_TOKEN=<hidden> here. Its output "
                                     "(amd-smi-metric.txt, amd-smi-static.txt, ")
    assert "hunter2" not in json.dumps([f.to_dict() for f in found])


def test_hung_tool_is_one_finding_for_all_its_commands(tmp_path):
    (finding,) = _tools_findings(tmp_path, {"nvidia-smi": "sleep 30"}, "nvidia", timeout_s=0.5)
    assert (finding.id, finding.level) == ("tools.availability", "warn")
    assert finding.title.endswith("did not answer and were killed")
    assert finding.title.count("`nvidia-smi") == 2


def test_json_carries_one_record_per_tool_problem_and_the_bundle_says_the_same(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_tool(bin_dir, "nvidia-smi", f"echo \"{NO_DRIVER}\"; exit 9")
    bundle = tmp_path / "node.tar.gz"
    proc = run_cli("doctor", "--json", "--no-selftest", "--tool-timeout", "5",
                   "--collect", str(bundle), env=cli_env(PATH=f"{bin_dir}:/usr/bin:/bin"))
    assert proc.returncode == 1, proc.stderr          # a failed check
    findings = json.loads(proc.stdout)["findings"]
    about = [f for f in findings if f["area"] == "tools" and "nvidia-smi" in
             f["title"] + f["detail"]]
    assert [f["id"] for f in about] == ["tools.gpu-tool-failed"]
    again = json.loads(run_cli("doctor", "--from", str(bundle), "--json").stdout)["findings"]
    assert [f for f in again if f["id"] == "tools.gpu-tool-failed"] == about


@pytest.mark.parametrize(("stderr", "shown"), [
    ("pcilib: cannot open /sys/bus/pci\nsecond line", "pcilib: cannot open /sys/bus/pci"),
    ("", "no message on stderr"),
    ("oops PASSWORD=swordfish", "oops PASSWORD=<hidden>"),
])
def test_failed_run_detail_is_the_first_line_of_stderr(stderr: str, shown: str) -> None:
    from collscope.doctor.facts import Facts
    from collscope.doctor.probes import ToolRun
    from collscope.doctor.rules.tools import check_tools

    run = ToolRun("lspci-vvv.txt", ["lspci", "-vvv"], "error", returncode=1, stderr=stderr)
    (verdict,) = check_tools(Facts(tools={"lspci-vvv.txt": run}))
    assert verdict.title == "`lspci -vvv` failed (exit 1)" and verdict.detail == shown


def test_different_tools_failing_alike_are_different_problems() -> None:
    from collscope.doctor.facts import Facts
    from collscope.doctor.probes import ToolRun
    from collscope.doctor.rules.tools import check_tools

    runs = {f: ToolRun(f, argv, "error", returncode=1) for f, argv in (
        ("lspci-vvv.txt", ["lspci", "-vvv"]), ("ibv_devinfo-v.txt", ["ibv_devinfo", "-v"]),
        ("ucx_info-v.txt", ["ucx_info", "-v"]), ("ucx_info-d.txt", ["ucx_info", "-d"]))}
    titles = [v.title for v in check_tools(Facts(tools=runs))]
    assert titles == ["`ibv_devinfo -v` failed (exit 1)", "`lspci -vvv` failed (exit 1)",
                      "`ucx_info -d` and `ucx_info -v` failed (exit 1)"]


def test_what_a_vendor_binding_printed_is_doctors_own_capture_not_an_unknown_tool_output(
        tmp_path, monkeypatch):
    # amdsmi 7.0.2 installed without libamd_smi.so (the `amd` extra on a machine without
    # ROCm): doctor keeps its load message in vendor-library-output.json and explains it under
    # gpu.vendor-library; the file is its own capture, never "not recognised".
    monkeypatch.syspath_prepend(str(FAKE_VENDOR))
    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    capture.forget()
    try:
        files = probes.capture(5.0, tools=[], root=tmp_path / "empty", environ={},
                               path=str(tmp_path), with_torch=False)
    finally:
        capture.forget()
    assert "Unable to find libamd_smi.so" in files[VENDOR_OUTPUT_FILE]
    _, findings = diagnose(files)
    assert [f.id for f in findings if f.id == "gpu.vendor-library"] == ["gpu.vendor-library"]
    assert not [f for f in findings if VENDOR_OUTPUT_FILE in f.title]
