"""What a measurement ran on: one definition of ``library_versions`` for every run record,
and ``version_tuple``, how a version string compares.

Pure of torch unless asked: ``monitor`` records the versions without importing torch (it must
start fast and stay light beside a training job); the measuring commands add the torch stack.
"""

from __future__ import annotations

import platform
from importlib import metadata

from collscope import __version__

# Installed packages recorded by name, and the vendor library of each GPU backend.
VENDOR_PACKAGES = {"amd": "amdsmi", "nvidia": "nvidia-ml-py"}


def _installed(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def torch_stack() -> dict[str, str | None]:
    """torch, its CUDA or HIP build, and the NCCL (RCCL on ROCm) it loads."""
    import torch
    import torch.distributed as dist

    rocm = bool(getattr(torch.version, "hip", None))
    nccl = None
    if torch.cuda.is_available() and torch.cuda.device_count() > 0 and dist.is_nccl_available():
        try:
            version = torch.cuda.nccl.version()
            nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
        except Exception:  # an RCCL/NCCL build that cannot report its version
            nccl = None
    return {"torch": torch.__version__, "cuda": getattr(torch.version, "cuda", None),
            "hip": getattr(torch.version, "hip", None), ("rccl" if rocm else "nccl"): nccl}


def library_versions(gpu_backend: str | None = None,
                     with_torch: bool = True) -> dict[str, str | None]:
    """collscope, Python, psutil, the vendor library of ``gpu_backend`` (amd: amdsmi, nvidia:
    nvidia-ml-py) and, ``with_torch``, the torch stack. None where something is absent."""
    versions: dict[str, str | None] = {"collscope": __version__,
                                       "python": platform.python_version()}
    if with_torch:
        versions.update(torch_stack())
    versions["psutil"] = _installed("psutil")
    if gpu_backend in VENDOR_PACKAGES:
        versions[VENDOR_PACKAGES[gpu_backend]] = _installed(VENDOR_PACKAGES[gpu_backend])
    return versions


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """(2, 21, 5) from "2.21.5", "2.21.5-HEAD:eef7b29" or "22105"-less strings; None if none."""
    if not text:
        return None
    parts = []
    for piece in text.replace("+", ".").replace("-", ".").split("."):
        if not (piece.isascii() and piece.isdigit()):    # "²".isdigit() is True, int() fails
            break
        parts.append(int(piece))
    return tuple(parts) or None
