"""What the parent of local ranks knows about the torch build without importing torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from collscope.runtime import entry
from collscope.runtime.torch_required import cpu_only_build
from tests.helpers import REPO, cli_env

# The shape of torch/version.py as the wheels write it (2.13.0+cpu, +cu128, +rocm6.4).
VERSION_FILE = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.13.0{suffix}'
debug = False
cuda: Optional[str] = {cuda}
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = {hip}
"""


@pytest.mark.parametrize("suffix,cuda,hip,cpu_only", [
    ("+cpu", "None", "None", True),
    ("+cu128", "'12.8'", "None", False),
    ("+rocm6.4", "None", "'6.4.43482'", False),
])
def test_the_build_is_read_from_its_version_file(tmp_path, suffix, cuda, hip, cpu_only):
    path = tmp_path / "version.py"
    path.write_text(VERSION_FILE.format(suffix=suffix, cuda=cuda, hip=hip))
    assert cpu_only_build(str(path)) is cpu_only


@pytest.mark.parametrize("text", ["cuda = None\n", "raise ImportError('no')\n", "(((\n"])
def test_a_file_of_another_shape_leaves_the_answer_to_torch(tmp_path, text):
    path = tmp_path / "version.py"
    path.write_text(text)            # no hip attribute, an error, a syntax error
    assert cpu_only_build(str(path)) is False
    assert cpu_only_build(str(tmp_path / "missing.py")) is False


def test_the_installed_build_agrees_with_torch():
    import torch

    assert cpu_only_build() is (torch.version.cuda is None and torch.version.hip is None)


def test_on_a_cpu_build_the_parent_resolves_gloo_without_torch(monkeypatch):
    monkeypatch.setattr("collscope.runtime.torch_required.cpu_only_build", lambda: True)
    assert entry._backend_and_gpus("auto") == ("gloo", 0)
    assert entry._backend_and_gpus("gloo") == ("gloo", 0)


def test_a_gpu_build_asks_torch(monkeypatch):
    from collscope.runtime import dist

    monkeypatch.setattr("collscope.runtime.torch_required.cpu_only_build", lambda: False)
    monkeypatch.setattr(dist, "gpu_count", lambda: 0)
    assert entry._backend_and_gpus("auto") == ("gloo", 0)


def test_the_parent_of_local_ranks_does_not_import_torch():
    """Each rank imports torch; the parent, on a CPU build, no longer does (the ranks start
    1.5-2 s sooner). Checked in a fresh process that resolves the backend and stops before
    spawning: links' validation refuses one rank."""
    import torch

    if torch.version.cuda or torch.version.hip:
        pytest.skip("a GPU build of torch: the parent asks torch for the GPUs")
    probe = ("import sys; from collscope.cli import main\n"
             "code = main(['links', '--nproc', '1'])\n"
             "print(code, 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=REPO, env=cli_env(), timeout=60)
    assert proc.stdout.split() == ["2", "False"], proc.stderr


def test_a_torch_that_does_not_import_is_one_line_and_other_modules_stay_bugs():
    from collscope.errors import UsageError
    from collscope.runtime.torch_required import unimportable

    broken = ImportError("libc10.so: cannot open shared object file", name="torch._C")
    said = unimportable(broken)
    assert isinstance(said, UsageError) and "installed but does not import" in str(said)
    assert "libc10.so" in str(said) and "download.pytorch.org" in str(said)
    ours = ImportError("no module", name="collscope.missing")
    assert unimportable(ours) is ours
