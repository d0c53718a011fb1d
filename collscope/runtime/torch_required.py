"""PyTorch for the commands that run collectives: collscope does not depend on it (users keep
their own ROCm or CUDA build, and an unpinned requirement would pull a CUDA wheel onto every
machine), so a missing torch is bad input, said in one line with how to install it."""

from __future__ import annotations

import functools
import importlib.util
import os

from collscope.errors import UsageError

INSTALL_TORCH = ("install the build for this machine: ROCm (AMD GPUs) `pip install torch "
                 "--index-url https://download.pytorch.org/whl/rocm6.4`, CUDA (NVIDIA GPUs) "
                 "`pip install torch`, CPU only `pip install torch --index-url "
                 "https://download.pytorch.org/whl/cpu`")


def require_torch(command: str) -> None:
    """Raise UsageError (exit 2, one line) when torch is not installed. The check finds the
    package without importing it: the parent of local ranks may never need torch itself, and
    an import costs 1.5-2 s of CPU, paid again by every rank."""
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError) as error:     # a broken parent package or a bad spec
        found, reason = False, str(error)
    else:
        reason = "No module named 'torch'"
    if not found:
        raise UsageError(f"PyTorch is missing ({reason}); {command} runs collectives through "
                         f"torch.distributed: {INSTALL_TORCH}")


def unimportable(error: ImportError) -> Exception:
    """The one line for a torch that is installed but does not import (a missing library,
    an undefined symbol, a wheel for another Python); an import error of another module is
    given back as it is (a bug to show, not bad input)."""
    if (error.name or "torch").partition(".")[0] != "torch":
        return error
    return UsageError(f"PyTorch is installed but does not import ({error}): {INSTALL_TORCH}")


@functools.cache     # asked before spawning and again to fork: read once
def cpu_only_build(version_file: str | None = None) -> bool:
    """True when the installed torch is built for CPU only (neither CUDA nor ROCm): it sees no
    GPU and has no NCCL, so ``--backend auto`` means gloo. Read from the build's own
    ``torch/version.py`` (or ``version_file``), run alone (it imports nothing of torch's), so
    that the parent of local ranks, which only needs this answer, does not pay for importing
    torch (1.5-2 s of CPU); anything unexpected answers False, and the caller asks torch."""
    try:
        if version_file is None:
            spec = importlib.util.find_spec("torch")
            folders = list(spec.submodule_search_locations or []) if spec else []
            if not folders:
                return False
            version_file = os.path.join(folders[0], "version.py")
        version_spec = importlib.util.spec_from_file_location("_collscope_torch_version",
                                                              version_file)
        if version_spec is None or version_spec.loader is None:
            return False
        version = importlib.util.module_from_spec(version_spec)
        version_spec.loader.exec_module(version)
    except Exception:   # noqa: BLE001  # a file of another build's shape: ask torch instead
        return False
    return all(hasattr(version, name) and getattr(version, name) is None
               for name in ("cuda", "hip"))
