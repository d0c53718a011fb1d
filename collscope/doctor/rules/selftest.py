"""The self-test's result, and its bandwidth against the GPU link's (doctor/link_bandwidth.py)."""

from __future__ import annotations

from collections.abc import Iterable

from collscope.doctor import link_bandwidth
from collscope.doctor.facts import Facts
from collscope.doctor.rules.common import human_bytes
from collscope.doctor.rules.registry import Verdict, rule
from collscope.doctor.selftest import BANDWIDTH_BOUND_BYTES
from collscope.parsers.common import GpuInfo, to_int


@rule("selftest.allreduce", "selftest", """
A small all_reduce between 2 local ranks (two gloo ranks in one process on CPU hosts; two
spawned ranks on GPUs 0 and 1 through RCCL/NCCL when the node has GPUs), verified element by
element, with its time (mean per operation). It proves that torch.distributed can set up a
group and move correct data on this node, with the environment as it is. Under --all-ranks
the self-test is one all_reduce across every rank of the job instead.
""")
def check_selftest(facts: Facts) -> Iterable[Verdict]:
    result = facts.selftest
    if result is None or result.status == "skipped":
        yield Verdict("info", "Self-test not run",
                      (result.error if result and result.error else
                       "Skipped (--no-selftest, or a bundle without selftest.json)."), "")
        return
    what = (f"{result.world_size}-rank {result.backend} all_reduce of "
            f"{human_bytes(result.size_bytes)}")
    if result.status == "ok":
        took = f", {result.time_us:.0f} us per op" if result.time_us is not None else ""
        bw = f", busbw {result.busbw_gbs:.3g} GB/s" if result.busbw_gbs is not None else ""
        yield Verdict("ok", f"Self-test passed: {what} verified{took}{bw}", result.method)
        return
    yield Verdict("fail", f"Self-test failed: {what}",
                  f"{result.error or 'no result'}. {result.method}",
                  "run with NCCL_DEBUG=INFO (GPUs) and check GLOO_SOCKET_IFNAME / "
                  "NCCL_SOCKET_IFNAME and that this host's name resolves (`getent hosts "
                  "$(hostname)`)")


@rule("selftest.bandwidth", "selftest", """
On GPUs the self-test's all_reduce runs at a bandwidth-bound size (256 MiB, where latency is
negligible) between GPUs 0 and 1, and its bus bandwidth is compared with what the link between
them should carry: PCIe lanes x generation, NVLink links x per-link rate, or one xGMI link
(the table is in collscope/doctor/link_bandwidth.py and the README). A healthy pair reaches
75-85% of that peak; below 60% is a warning and below 30% a failure. The likely causes, most
common first: the GPUs talk through host memory instead of peer to peer (P2P disabled,
NCCL_P2P_DISABLE / NCCL_P2P_LEVEL, IOMMU or PCIe ACS redirecting P2P through the root
complex), a PCIe link trained below its width or generation (a reseated or damaged card,
BIOS settings), a degraded NVLink/xGMI link, power or thermal throttling, or another process
using the GPUs.
""")
def check_selftest_bandwidth(facts: Facts) -> Iterable[Verdict]:
    result = facts.selftest
    if (result is None or result.status != "ok" or result.backend == "gloo"
            or result.busbw_gbs is None or result.size_bytes < BANDWIDTH_BOUND_BYTES):
        return
    peak = expected_peak(facts)
    if peak is None:
        yield Verdict("info", f"Self-test busbw {result.busbw_gbs:.3g} GB/s: no link figure to "
                      "compare with", "The link between GPU 0 and GPU 1 (type, lanes, NVLink "
                      "count, or GPU model) is not in the capture.", "")
        return
    ratio = result.busbw_gbs / peak.gbs
    level = link_bandwidth.verdict_level(result.busbw_gbs, peak)
    detail = (f"2-rank all_reduce of {human_bytes(result.size_bytes)} between GPU 0 and 1: "
              f"busbw {result.busbw_gbs:.3g} GB/s (nccl-tests' bus bandwidth, mean time per "
              f"op) = {ratio:.0%} of the link's one-direction peak {peak.gbs:.4g} GB/s "
              f"({peak.how}).")
    if level == "ok":
        yield Verdict("ok", f"Self-test bandwidth {ratio:.0%} of the GPU link's peak", detail)
        return
    yield Verdict(level, f"Self-test bandwidth only {ratio:.0%} of what the GPU link should "
                  "carry", detail + " Likely: P2P not used (through host memory), a PCIe link "
                  "trained below its width/generation, a degraded NVLink/xGMI link, "
                  "throttling, or another process on the GPUs.",
                  "check P2P (NCCL_P2P_DISABLE / NCCL_P2P_LEVEL unset; host.iommu and "
                  "host.pcie-acs above), the trained link (`lspci -vv` LnkSta vs LnkCap; "
                  "nvidia-smi -q -d PCIE / amd-smi metric -P; nvidia-smi nvlink -s / amd-smi "
                  "xgmi), clocks and power (nvidia-smi -q -d PERFORMANCE / amd-smi metric), and "
                  "that no other process uses the GPUs")


def expected_peak(facts: Facts) -> link_bandwidth.LinkPeak | None:
    """The one-direction peak of the link between GPU 0 and GPU 1."""
    topo = facts.topology
    link = topo.link_type[0][1] if topo is not None and topo.gpus >= 2 else None
    model = facts.gpu_platform
    if link == "nvlink":
        weight = topo.weight[0][1] if topo is not None else None
        return link_bandwidth.nvlink_peak(model, weight)
    if link == "xgmi":
        return link_bandwidth.xgmi_peak(model)
    peaks = [p for p in (_pcie_of(facts, gpu) for gpu in facts.gpus[:2]) if p is not None]
    return min(peaks, key=lambda p: p.gbs) if len(peaks) == 2 else None


def _pcie_of(facts: Facts, gpu: GpuInfo) -> link_bandwidth.LinkPeak | None:
    """The PCIe peak at the link's max generation and width (the current ones drop while the
    GPU idles), naming the current ones too when they differ."""
    extra = gpu.extra
    current = (to_int(extra.get("pcie.link.gen.current", "")),
               to_int(extra.get("pcie.link.width.current", "")))
    most = (to_int(extra.get("pcie.link.gen.max", "")),
            to_int(extra.get("pcie.link.width.max", "")))
    bus = (gpu.pci_bus_id or "").lower()[-12:]
    device = next((d for d in facts.pci if bus and d.address.lower().endswith(bus)), None)
    if device is not None:
        if None in current:
            current = (link_bandwidth.pcie_generation(device.link_speed), device.link_width)
        if None in most:
            most = (link_bandwidth.pcie_generation(device.max_link_speed), device.max_link_width)
    if None in most:
        return link_bandwidth.pcie_peak(*current)
    peak = link_bandwidth.pcie_peak(*most)
    if peak is None:
        return link_bandwidth.pcie_peak(*current)
    now = ""
    if None not in current:
        now = f"; current gen{current[0]} x{current[1]}" + (
            ", lower while the GPU idles" if current != most else "")
    return link_bandwidth.LinkPeak(peak.gbs, f"{peak.how} (the link's max{now})")
