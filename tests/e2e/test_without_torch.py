"""collscope installed where PyTorch is not (torch is deliberately not a dependency).

The environment is a real virtual environment, made at test time, holding this tree (a .pth
file, as an editable install has) and collscope's declared dependencies, resolved from its own
metadata (Requires-Dist, no extras) and linked from the environment running the tests; torch is
not among them, so it is absent as on a machine where only `pip install collscope` ran: the
import fails where Python looks for it, and its distribution metadata is not there either.
Hiding torch inside a process that has it (``sys.modules["torch"] = None``) would leave its
metadata and every other package of the test environment visible, and so would test less.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from collscope.runtime.torch_required import INSTALL_TORCH
from tests.conftest import fixture_path
from tests.helpers import REPO, cli_env, usage_error

H100 = ("nccl-tests-logs", "h100_2node_default_nccl_issue309.txt")
H100_4 = ("nccl-tests-logs", "h100_4node_default_nccl_issue309.txt")
TRACE = ("traces", "HolisticTraceAnalysis__nccl_data_rank0of2.json.gz")


def runtime_dependencies(name: str = "collscope") -> dict[str, metadata.Distribution]:
    """The distributions ``pip install NAME`` brings (no extras), NAME included."""
    found: dict[str, metadata.Distribution] = {}
    todo = [name]
    while todo:
        key = canonicalize_name(todo.pop())
        if key in found:
            continue
        found[key] = metadata.distribution(key)
        for text in found[key].requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a fresh environment with collscope and its dependencies only."""
    root = tmp_path_factory.mktemp("no-torch") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=120)
    site = next((root / "lib").glob("python*/site-packages"))
    (site / "collscope-tree.pth").write_text(f"{REPO}\n")
    for key, dist in runtime_dependencies().items():
        if key == "collscope":
            continue
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            if not (site / top).exists():
                (site / top).symlink_to(dist.locate_file(top))
    return root / "bin" / "python"


def _run(python: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env.pop("PYTHONPATH")          # nothing of the test environment leaks in
    return subprocess.run([str(python), "-m", "collscope", *args], capture_output=True,
                          text=True, timeout=180, env=env, cwd=cwd)


def test_the_environment_has_collscope_and_no_torch(python: Path) -> None:
    assert "torch" not in runtime_dependencies()
    probe = subprocess.run([str(python), "-c", "import collscope, importlib.util, "
                            "importlib.metadata as m; print(collscope.__file__); "
                            "print(importlib.util.find_spec('torch')); "
                            "print([d.name for d in m.distributions()])"],
                           capture_output=True, text=True, timeout=60, env=cli_env(
                               PYTHONPATH=""))
    where, spec, names = probe.stdout.splitlines()
    assert where == str(REPO / "collscope" / "__init__.py")
    assert spec == "None" and "torch" not in names


@pytest.mark.parametrize("args", [["bench", "-e", "1K"], ["train"], ["overlap"], ["links"],
                                  ["tune", "--space", "NCCL_ALGO=Ring,Tree"]],
                         ids=lambda a: a[0])
def test_commands_that_run_collectives_say_in_one_line_how_to_install_torch(
        python: Path, args: list[str]) -> None:
    line = usage_error(_run(python, *args), "PyTorch is missing", INSTALL_TORCH)
    assert line.startswith(f"collscope {args[0]}: ")
    for build in ("whl/rocm", "CUDA", "whl/cpu"):
        assert build in line


BROKEN_TORCH = """raise ImportError("libtorch_cpu.so: cannot open shared object file",
                  name="torch._C")
"""
CPU_VERSION = "cuda = None\nhip = None\n__version__ = '2.13.0+cpu'\n"


def test_a_torch_that_does_not_import_is_said_in_one_line(python: Path, tmp_path: Path) -> None:
    """A CPU build whose library is gone: found, but its import fails in the parent before
    any rank starts (it imports torch once to fork the ranks)."""
    package = tmp_path / "broken" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(BROKEN_TORCH)
    (package / "version.py").write_text(CPU_VERSION)
    env = cli_env(PYTHONPATH=str(package.parent))
    proc = subprocess.run([str(python), "-m", "collscope", "bench", "-e", "1K"],
                          capture_output=True, text=True, timeout=180, env=env, cwd=REPO)
    line = usage_error(proc, "PyTorch is installed but does not import", "libtorch_cpu.so")
    assert line.startswith("collscope bench: ") and INSTALL_TORCH in line


def test_doctor_reports_torch_as_missing(python: Path) -> None:
    proc = _run(python, "doctor", "--json", "--no-selftest", "--tool-timeout", "10")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    (finding,) = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "torch.build"]
    assert (finding["level"], finding["title"]) == ("fail", "torch cannot be imported")
    assert "No module named 'torch'" in finding["detail"] and finding["fix"] == INSTALL_TORCH


def test_commands_that_read_files_work(python: Path, tmp_path: Path) -> None:
    log, log_4 = fixture_path(*H100), fixture_path(*H100_4)
    records, model = tmp_path / "h100.jsonl", tmp_path / "model.json"
    runs = [
        ["import", str(log), "-o", str(records)],
        ["report", str(records), str(log_4), "-o", str(tmp_path / "r.html")],
        ["compare", str(records), str(log)],
        ["trace", str(fixture_path(*TRACE)), "--json", str(tmp_path / "trace.jsonl")],
        ["model", "fit", str(log), str(log_4), "-o", str(model)],
        ["model", "predict", str(model), "--collective", "all_reduce", "--nodes", "8",
         "--ranks-per-node", "8"],
    ]
    for args in runs:
        proc = _run(python, *args, cwd=tmp_path)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
    assert records.stat().st_size and model.stat().st_size
    assert "<svg" in (tmp_path / "r.html").read_text()
    # hang reads dumps that torch wrote, with no torch of its own: exit 1, the culprit named
    hang = _run(python, "hang", str(fixture_path("flight-recorder", "gloo_skip_4ranks")),
                cwd=tmp_path)
    assert hang.returncode == 1 and hang.stdout.startswith("HANG: rank 2 "), hang.stderr
    assert json.loads((tmp_path / "trace.jsonl").read_text().splitlines()[0])["kind"] == "run"
