"""Vendor libraries that print while loading never reach --json; doctor names the cause."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from collscope.doctor.facts import Facts
from collscope.doctor.rules.gpu import check_vendor_library
from collscope.doctor.vendor_output import from_capture
from collscope.hw import capture
from tests.helpers import FAKE_VENDOR, REPO, cli_env


def test_fd_level_capture_keeps_python_and_c_output_off_stdout(capfd):
    capture.forget()
    with capture.captured("somelib"):
        print("from python", flush=True)
        os.write(1, b"from C, fd 1\n")
        os.write(2, b"from C, fd 2\n")
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert capture.printed()["somelib"].splitlines() == ["from python", "from C, fd 1",
                                                         "from C, fd 2"]
    capture.forget()


def test_rule_reports_a_binding_without_its_library():
    text = ("/opt/rocm/lib/libamd_smi.so: cannot open shared object file: No such file or "
            "directory\nUnable to find libamd_smi.so library try installing amd-smi-lib\n")
    facts = Facts(vendor_output=from_capture({"vendor-library-output.json":
                                              json.dumps({"amdsmi": text})}))
    (verdict,) = check_vendor_library(facts)
    assert verdict.level == "warn"
    assert verdict.title.startswith("amdsmi is installed but its library is missing")
    assert "Unable to find libamd_smi.so" in verdict.detail
    assert list(check_vendor_library(Facts())) == []
    assert from_capture({"vendor-library-output.json": "not json"}) == {}


def test_doctor_json_stays_pure_with_amdsmi_installed_and_no_rocm_library():
    env = cli_env()
    env["PYTHONPATH"] = f"{FAKE_VENDOR}{os.pathsep}{env['PYTHONPATH']}"
    proc = subprocess.run([sys.executable, "-m", "collscope", "doctor", "--json",
                           "--no-selftest", "--tool-timeout", "10"], capture_output=True,
                          text=True, timeout=120, env=env, cwd=REPO)
    report = json.loads(proc.stdout)          # the whole of stdout is one JSON document
    (finding,) = [f for f in report["findings"] if f["id"] == "gpu.vendor-library"]
    assert finding["title"].startswith("amdsmi is installed but its library is missing")
    assert "libamd_smi.so" in finding["detail"]
    assert not [f for f in report["findings"] if "vendor-library-output" in f["title"]]
    assert "Traceback" not in proc.stderr
