"""Set-up's PyTorch: the CPU build, installed only where no torch is importable.

    python tools/install_torch.py VERSION      (what `make setup` runs, in the venv's python)

A torch that already imports (a ROCm or CUDA build the venv sees through system
site-packages) is used as it is. Otherwise: on Linux, PyPI's `torch==X` is the CUDA build
(2.13.0+cu130 with its nvidia-* libraries: 5.2 GB installed), so PyTorch's CPU index is asked
first for `torch==X+cpu`, after a probe with a short timeout; where that index is unreachable,
`torch==X+cpu` is asked of pip's own configuration (a mirror or find-links directory may hold
it); where neither has a wheel for this interpreter, the registry's `torch==X` is installed. What is
installed, from where, and how much it added to the environment are printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROBE_TIMEOUT_S = 5.0
PIP_TIMEOUT_S = 3600.0            # a multi-GB CUDA build over a slow link


@dataclass(frozen=True)
class Plan:
    """One pip install to try: the requirement, extra pip arguments, where it comes from."""
    requirement: str
    pip_args: tuple[str, ...]
    source: str


def say(line: str) -> None:
    print(f"setup: {line}", flush=True)


def importable_torch(python: str) -> str | None:
    """'VERSION at PATH' of the torch ``python`` imports, or None where none imports."""
    probe = subprocess.run([python, "-c", "import torch; print(torch.__version__, 'at', "
                            "torch.__path__[0])"], capture_output=True, text=True, timeout=300)
    return probe.stdout.strip() if probe.returncode == 0 else None


def probe_index(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None where ``url`` answers within the timeout, else why it did not."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"),
                                    timeout=timeout_s):
            return None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        return f"{type(error).__name__}: {reason}"


def plans(version: str, platform: str, index_problem: str | None) -> list[Plan]:
    """The installs to try, in order: on Linux the CPU build first, from PyTorch's CPU index
    where it answers, else from what pip's configuration names (a mirror or a find-links
    directory may hold the CPU wheel); the registry's build always last."""
    registry = Plan(f"torch=={version}", (), "the package registry pip is configured with")
    if not platform.startswith("linux"):
        return [registry]
    cpu = Plan(f"torch=={version}+cpu", (), "pip's configured registry and find-links "
               "(PyTorch's CPU index unreachable)") if index_problem is not None else \
        Plan(f"torch=={version}+cpu", ("--extra-index-url", CPU_INDEX),
             f"PyTorch's CPU index ({CPU_INDEX})")
    return [cpu, registry]


def tree_bytes(root: Path) -> int:
    """Bytes of the regular files under ``root`` (symbolic links not followed)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                total += os.path.getsize(path)
    return total


def installed(python: str) -> dict[str, str]:
    """name -> version of every distribution ``python`` sees."""
    listing = subprocess.run(
        [python, "-c", "import importlib.metadata as m\n"
         "for d in m.distributions(): print(d.metadata['Name'], d.version)"],
        capture_output=True, text=True, timeout=120, check=True)
    return dict(line.split(" ", 1) for line in listing.stdout.splitlines() if " " in line)


def describe(added: dict[str, str], size_bytes: int, prefix: Path) -> str:
    """One line: which torch build came, with how many packages, and their size on disk."""
    torch_version = added.get("torch", "?")
    cuda = sorted(name for name in added if name.lower().startswith("nvidia-"))
    build = ("the CPU-only build" if "+cpu" in torch_version
             else f"a CUDA build, with {len(cuda)} nvidia-* libraries" if cuda
             else "the registry's build")
    others = len(added) - 1
    return (f"installed torch {torch_version} ({build}) and {others} other "
            f"package{'s' * (others != 1)}: {size_bytes / 1e9:.2f} GB added to {prefix} "
            f"(its files' sizes summed before and after)")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: install_torch.py VERSION   (for example 2.13.0)\n")
        return 2
    version, python, prefix = argv[0], sys.executable, Path(sys.prefix)
    found = importable_torch(python)
    if found:
        say(f"torch {found} imports here: using it, installing none")
        return 0
    index_problem = None
    if sys.platform.startswith("linux"):
        index_problem = probe_index(f"{CPU_INDEX}/torch/")
        if index_problem:
            say(f"PyTorch's CPU index did not answer in {PROBE_TIMEOUT_S:g} s "
                f"({index_problem}); the CPU build is looked for where pip is configured to "
                "look, else the registry's torch it is (on Linux PyPI's build is the CUDA "
                "one, several GB)")
    before_bytes, before = tree_bytes(prefix), installed(python)
    for plan in plans(version, sys.platform, index_problem):
        say(f"no torch imports here: installing {plan.requirement} from {plan.source}")
        pip = subprocess.run([python, "-m", "pip", "install", "-q", plan.requirement,
                              *plan.pip_args], timeout=PIP_TIMEOUT_S)
        if pip.returncode == 0:
            added = {name: v for name, v in installed(python).items() if before.get(name) != v}
            say(describe(added, tree_bytes(prefix) - before_bytes, prefix))
            return 0
        say(f"pip could not install {plan.requirement} (exit {pip.returncode})")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
