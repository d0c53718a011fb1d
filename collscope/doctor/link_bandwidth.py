"""What a GPU-to-GPU link should carry: the table the self-test's bandwidth is judged against.

Peak one-direction bandwidth in GB/s (1e9 B/s), from the vendors' published figures:

==========================  ==================================================================
link                        peak one direction
==========================  ==================================================================
PCIe gen N x W              W lanes x per-lane rate after encoding: gen3 0.985, gen4 1.969,
                            gen5 3.938, gen6 7.563 GB/s (PCI-SIG; gen4 x16 = 31.5 GB/s)
NVLink (``NV#`` links)      links x per-link rate: 25 GB/s for NVLink 2-4 (V100, A100, H100/
                            H200/H800), 50 GB/s for NVLink 5 (B200/B300/GB200/GB300); NV18 on
                            H100/H200 = 450 GB/s
xGMI (Infinity Fabric)      per direct link: 64 GB/s on MI300X/MI308X/MI325X (128 GB/s
                            bidirectional), 76.8 GB/s on MI350X/MI355X, 50 GB/s on MI250X/MI250/
                            MI210, 46 GB/s on MI100; one link between each GPU pair of an
                            8-GPU OAM platform
==========================  ==================================================================

A 2-rank all_reduce moves each byte across the pair's link once in each direction (nccl-tests'
bus bandwidth for 2 ranks equals algbw), so its busbw approaches the link's one-direction
peak: about 75-85% of it on a healthy node. Below ``WARN_RATIO`` of the peak is a warning,
below ``FAIL_RATIO`` a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collscope.doctor.rules.registry import Level

PCIE_LANE_GBS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
# sysfs current_link_speed "16.0 GT/s PCIe" -> generation
PCIE_GEN_OF_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
NVLINK_LINK_GBS = ((re.compile(r"\b(?:B100|B200|B300|GB200|GB300)\b", re.I), 50.0),
                   (re.compile(r"V100|A100|A800|H100|H200|H800|H20\b|GH200", re.I), 25.0))
XGMI_LINK_GBS = ((re.compile(r"MI3(?:00|08|25)", re.I), 64.0),
                 (re.compile(r"MI35[05]", re.I), 76.8),
                 (re.compile(r"MI2[15]0", re.I), 50.0),
                 (re.compile(r"MI100", re.I), 46.0))
WARN_RATIO = 0.6
FAIL_RATIO = 0.3


@dataclass(frozen=True)
class LinkPeak:
    """A link's expected one-direction peak and how it was worked out."""

    gbs: float
    how: str


def pcie_generation(link_speed: str | None) -> int | None:
    """2.5/5/8/16/32/64 GT/s (sysfs current_link_speed, amd-smi SPEED) -> PCIe generation."""
    match = re.search(r"(\d+(?:\.\d+)?)\s*GT/s", link_speed or "")
    return PCIE_GEN_OF_GTS.get(float(match.group(1))) if match else None


def pcie_peak(generation: int | None, width: int | None) -> LinkPeak | None:
    if generation not in PCIE_LANE_GBS or not width:
        return None
    rate = PCIE_LANE_GBS[generation]
    return LinkPeak(rate * width, f"PCIe gen{generation} x{width}: {width} x {rate} GB/s")


def nvlink_peak(model: str | None, links: int | None) -> LinkPeak | None:
    if not links:
        return None
    for pattern, rate in NVLINK_LINK_GBS:
        if model and pattern.search(model):
            return LinkPeak(rate * links, f"NVLink x{links} ({model}): {links} x {rate} GB/s")
    return None


def xgmi_peak(model: str | None) -> LinkPeak | None:
    for pattern, rate in XGMI_LINK_GBS:
        if model and pattern.search(model):
            return LinkPeak(rate, f"one xGMI link ({model}): {rate} GB/s")
    return None


def verdict_level(measured_gbs: float, peak: LinkPeak) -> Level:
    ratio = measured_gbs / peak.gbs if peak.gbs > 0 else 1.0
    return "fail" if ratio < FAIL_RATIO else "warn" if ratio < WARN_RATIO else "ok"
