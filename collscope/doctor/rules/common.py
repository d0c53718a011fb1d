"""Helpers the rules of several areas share: how findings print lists, ranges and sizes."""

from __future__ import annotations

from collections.abc import Iterable

from collscope.doctor.facts import Facts
from collscope.units import format_bytes

VISIBLE_DEVICES = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                   "GPU_DEVICE_ORDINAL")


def human_bytes(value: int | None) -> str:
    """A memory size for a finding: 192 GiB, 1.5 KiB, "unknown" for None."""
    if value is None:
        return "unknown"
    return format_bytes(value, whole_from=10, largest="TiB")


def ranges(numbers: Iterable[int]) -> str:
    """"0-3,6" from [0, 1, 2, 3, 6]."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def listing(items: list[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def gpu_count(facts: Facts) -> int:
    return len(facts.gpus) or (facts.torch.gpu_count if facts.torch else 0)
