"""PyTorch for the commands that run collectives: collscope does not depend on it (users keep
their own ROCm or CUDA build, and an unpinned requirement would pull a CUDA wheel onto every
machine), so a missing torch is bad input, said in one line with how to install it."""

from __future__ import annotations

from collscope.errors import UsageError

INSTALL_TORCH = ("install the build for this machine: ROCm (AMD GPUs) `pip install torch "
                 "--index-url https://download.pytorch.org/whl/rocm6.4`, CUDA (NVIDIA GPUs) "
                 "`pip install torch`, CPU only `pip install torch --index-url "
                 "https://download.pytorch.org/whl/cpu`")


def require_torch(command: str) -> None:
    """Raise UsageError (exit 2, one line) when torch cannot be imported."""
    try:
        import torch  # noqa: F401  # the import is the check
    except ImportError as error:
        raise UsageError(f"PyTorch is missing ({error}); {command} runs collectives through "
                         f"torch.distributed: {INSTALL_TORCH}") from None
