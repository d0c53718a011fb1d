"""Set-up's torch (tools/install_torch.py): which build is asked for where, and what is said."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.helpers import REPO

_spec = importlib.util.spec_from_file_location("install_torch", REPO / "tools/install_torch.py")
assert _spec is not None and _spec.loader is not None
install_torch = importlib.util.module_from_spec(_spec)
sys.modules["install_torch"] = install_torch     # its dataclass looks its module up there
_spec.loader.exec_module(install_torch)


def test_linux_asks_the_cpu_index_first_and_the_registry_after():
    first, last = install_torch.plans("2.13.0", "linux", None)
    assert first.requirement == "torch==2.13.0+cpu"
    assert first.pip_args == ("--extra-index-url", "https://download.pytorch.org/whl/cpu")
    assert (last.requirement, last.pip_args) == ("torch==2.13.0", ())


def test_an_unreachable_index_leaves_the_cpu_build_to_pips_configuration():
    first, last = install_torch.plans("2.13.0", "linux", "URLError: [Errno -2] Name or "
                                      "service not known")
    assert (first.requirement, first.pip_args) == ("torch==2.13.0+cpu", ())
    assert (last.requirement, last.pip_args) == ("torch==2.13.0", ())


@pytest.mark.parametrize("platform,problem", [
    ("darwin", None),           # PyPI's macOS and Windows wheels are the CPU build already
    ("win32", None),
])
def test_otherwise_the_registry_alone(platform, problem):
    (only,) = install_torch.plans("2.9.1", platform, problem)
    assert (only.requirement, only.pip_args) == ("torch==2.9.1", ())


def test_the_index_probe_says_why_it_failed_and_never_raises():
    # Nothing listens on port 9 of the loopback: refused at once, no network needed.
    problem = install_torch.probe_index("http://127.0.0.1:9/whl/cpu/torch/", timeout_s=2)
    assert problem is not None and "URLError" in problem
    assert "unknown url type" in install_torch.probe_index("nonsense")


def test_what_was_installed_is_said_with_its_build_and_size(tmp_path):
    cpu = install_torch.describe({"torch": "2.13.0+cpu", "sympy": "1.14.0", "filelock": "3.20"},
                                 860_000_000, tmp_path)
    assert cpu.startswith("installed torch 2.13.0+cpu (the CPU-only build) and 2 other "
                          "packages: 0.86 GB added to ")
    cuda = install_torch.describe({"torch": "2.13.0", "nvidia-cublas": "13.1",
                                   "nvidia-nccl-cu13": "2.28"}, 5_200_000_000, tmp_path)
    assert "(a CUDA build, with 2 nvidia-* libraries) and 2 other packages: 5.20 GB" in cuda


def test_the_files_under_a_folder_are_summed_without_following_links(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 1000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 24)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert install_torch.tree_bytes(tmp_path) == 1024


def test_an_importable_torch_is_used_and_nothing_installed(capsys):
    import torch

    assert install_torch.main(["2.13.0"]) == 0
    assert capsys.readouterr().out == (f"setup: torch {torch.__version__} at "
                                       f"{torch.__path__[0]} imports here: using it, "
                                       "installing none\n")


def test_a_missing_version_is_one_usage_line(capsys):
    assert install_torch.main([]) == 2
    assert capsys.readouterr().err.startswith("usage: install_torch.py VERSION")
