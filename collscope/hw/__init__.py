"""Vendor GPU backends behind one small interface.

This package is the only place that imports ``amdsmi`` or ``pynvml`` (and, for ``doctor``,
runs ``amd-smi`` / ``rocm-smi`` / ``nvidia-smi``). Everything above it sees ``GpuBackend``:
``inventory()`` for what the GPUs are, ``metrics()`` for what they are doing now.

Rules every backend follows (as nvitop's NVML wrapper does):

- the vendor library is imported and initialised lazily, inside the backend module only, and a
  missing library raises ImportError with the ``pip install collscope[...]`` hint;
- every vendor call goes through one helper that maps "not supported", "N/A" and the library's
  own errors to ``None``: a metric the source lacks is None, never 0, so that an idle GPU and a
  GPU that does not report a value stay distinguishable;
- ``available()`` never raises: it answers whether this backend can see at least one GPU.

Backends that parse command-line tools instead of calling libraries (the fallbacks ``doctor``
adds) implement the same four members and join ``detect_backend`` through ``candidates``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from collscope.hw.backend import GpuBackend, GpuMetrics
from collscope.parsers.common import GpuInfo

__all__ = ["GpuBackend", "GpuInfo", "GpuMetrics", "BACKEND_NAMES", "detect_backend",
           "make_backend"]

BACKEND_NAMES = ("amd", "nvidia", "none")


def make_backend(name: str) -> GpuBackend:
    """The backend called ``name`` (amd, nvidia, none), not yet initialised."""
    if name == "amd":
        from collscope.hw.amd import AmdBackend

        return AmdBackend()
    if name == "nvidia":
        from collscope.hw.nvidia import NvidiaBackend

        return NvidiaBackend()
    if name == "none":
        from collscope.hw.none import NoneBackend

        return NoneBackend()
    raise ValueError(f"unknown GPU backend {name!r}; use one of {', '.join(BACKEND_NAMES)}")


def _default_candidates() -> list[Callable[[], GpuBackend]]:
    """Each vendor's library first, then its command-line tools (slower to sample, but they
    are there on machines where the Python library is not installed)."""
    from collscope.hw.amd import AmdCliBackend
    from collscope.hw.nvidia import NvidiaSmiBackend

    return [lambda: make_backend("amd"), AmdCliBackend, lambda: make_backend("nvidia"),
            NvidiaSmiBackend]


def detect_backend(candidates: Sequence[Callable[[], GpuBackend]] | None = None) -> GpuBackend:
    """The first candidate that sees a GPU, else the ``none`` backend.

    AMD comes first (collscope's first-class target), then NVIDIA; each through its library,
    else its command-line tools. A machine with both vendors'
    libraries installed but one vendor's GPUs gets the vendor whose library sees devices.
    Candidates that are not chosen are closed, so no library stays initialised for nothing.
    """
    from collscope.hw.none import NoneBackend

    factories = list(candidates) if candidates is not None else _default_candidates()
    for factory in factories:
        backend = factory()
        if backend.available():
            return backend
        backend.close()
    return NoneBackend()
