"""Topology: links between GPUs, the fabric the platform should have, NUMA placement of GPUs
and NICs."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from collscope.doctor.facts import Facts
from collscope.doctor.rules.common import gpu_count, listing, ranges
from collscope.doctor.rules.registry import Verdict, rule

FAST_LINKS = ("self", "xgmi", "nvlink")
# Platforms whose GPUs are meant to talk over xGMI / NVLink inside a node (OAM/SXM parts).
# PCIe add-in variants ("H100 PCIe", "A100-PCIE") are excluded by the second pattern.
FABRIC_PLATFORMS = (
    (re.compile(r"MI2[05]0|MI30[08]|MI32[05]|MI35[05]", re.I), "xgmi"),
    (re.compile(r"\b(?:H100|H200|H800|H20|A100|A800|B100|B200|B300|GB200|GB300)\b", re.I),
     "nvlink"),
)
PCIE_VARIANT = re.compile(r"pcie|\bnvl\b", re.I)


@rule("topology.links", "topology", """
GPU x GPU link types and weights as the vendor tool sees them (amd-smi topology or
rocm-smi --showtopo on AMD, nvidia-smi topo -m on NVIDIA). xGMI (AMD Infinity Fabric) and
NVLink carry intra-node collectives at hundreds of GB/s; PCIe paths (pcie/pix/pxb/phb/node/sys)
at a small fraction. rocm-smi reports hops 1 for every xGMI pair even when two GPUs are not
directly linked, so collscope reads link types and weights, not hops. --json prints the
matrices under inventory.topology.
""")
def check_topology_links(facts: Facts) -> Iterable[Verdict]:
    topo = facts.topology
    if topo is None:
        if gpu_count(facts) >= 2:
            yield Verdict("info", "No GPU topology matrix captured",
                          "Neither amd-smi topology, rocm-smi --showtopo nor nvidia-smi topo -m "
                          "gave a matrix, so links between GPUs are unknown.",
                          "install the vendor tools (ROCm's amd-smi/rocm-smi, nvidia-smi)")
        return
    pairs: Counter[str] = Counter()
    weights: dict[str, set[int]] = {}
    for i in range(topo.gpus):
        for j in range(i + 1, topo.gpus):
            link = _cell(topo.link_type, i, j) or "unknown"
            pairs[link] += 1
            weight = _cell(topo.weight, i, j)
            if isinstance(weight, int):
                weights.setdefault(link, set()).add(weight)
    summary = "; ".join(f"{n} pair(s) {link}" + (
        f" (weight {', '.join(map(str, sorted(weights[link])))})" if link in weights else "")
        for link, n in pairs.most_common())
    yield Verdict("ok" if pairs else "info",
                  f"{topo.gpus} GPUs: {summary or 'no pairs'}",
                  f"From {facts.topology_source}. {summary}.")


def _cell(matrix: list[list[Any]], i: int, j: int) -> Any:
    try:
        return matrix[i][j]
    except (IndexError, TypeError):
        return None


def expected_fabric(platform: str) -> str | None:
    """"xgmi" / "nvlink" for platforms built around that fabric, else None."""
    if PCIE_VARIANT.search(platform):
        return None
    for pattern, fabric in FABRIC_PLATFORMS:
        if pattern.search(platform):
            return fabric
    return None


@rule("topology.fabric", "topology", """
MI250/MI300X/MI308X/MI325X/MI355X OAM platforms connect every GPU of a node over xGMI, and
H100/H200/A100/B200 SXM platforms over NVLink. A pair that shows a PCIe link type there
means a link is down, a GPU is in another partition or VM, or the tool lists the wrong
devices; RCCL/NCCL then routes that pair (and every ring through it) over PCIe at a fraction
of the bandwidth. Other platforms (PCIe cards) are reported, not judged.
""")
def check_topology_fabric(facts: Facts) -> Iterable[Verdict]:
    topo = facts.topology
    if topo is None or topo.gpus < 2:
        return
    platform = facts.gpu_platform
    fabric = expected_fabric(platform)
    slow = [(i, j, _cell(topo.link_type, i, j)) for i in range(topo.gpus)
            for j in range(i + 1, topo.gpus) if _cell(topo.link_type, i, j) not in FAST_LINKS]
    total = topo.gpus * (topo.gpus - 1) // 2
    if fabric is None:
        if slow:
            yield Verdict("info", f"{len(slow)} of {total} GPU pairs communicate over PCIe",
                          f"Platform {platform or 'unknown'} is not one collscope expects to "
                          "have xGMI/NVLink between all GPUs.", "")
        return
    if not slow:
        yield Verdict("ok", f"All {total} GPU pairs over {fabric}",
                      f"{platform}: every pair of the {topo.gpus} GPUs is linked by {fabric}.")
        return
    shown = listing([f"{i}-{j} ({link})" for i, j, link in slow])
    tool = "`amd-smi xgmi` / `rocm-smi --showtopo`" if fabric == "xgmi" else \
        "`nvidia-smi nvlink --status` / `nvidia-smi topo -m`"
    yield Verdict("warn", f"{len(slow)} of {total} GPU pairs are PCIe-only on {platform} "
                  f"(expected {fabric})",
                  f"Pairs {shown} have no {fabric} link. RCCL/NCCL routes them over PCIe, "
                  "which slows every collective that crosses them.",
                  f"inspect the links with {tool}; check GPU partitioning/VM passthrough and "
                  "dmesg for link errors; have the node serviced if a link is down")


@rule("topology.numa", "topology", """
Each GPU and each NIC hangs off one CPU socket (NUMA node). Inter-node traffic of a GPU whose
nearest RDMA NIC sits on the other socket crosses the CPU interconnect (xGMI between EPYC
sockets, UPI on Intel) twice, which caps bandwidth and adds latency; ranks should also be
bound to the NUMA node of their GPU. Reported: GPUs and RDMA NICs per NUMA node
(/sys/bus/pci/devices/*/numa_node, rocm-smi --showtopo, nvidia-smi topo -m).
""")
def check_topology_numa(facts: Facts) -> Iterable[Verdict]:
    if not facts.gpus:
        return
    gpu_numa: dict[int | None, list[int]] = {}
    for gpu in facts.gpus:
        gpu_numa.setdefault(gpu.numa_node, []).append(gpu.index)
    nic_numa: dict[int | None, list[str]] = {}
    for dev in facts.rdma:
        if any(p.active for p in dev.ports):
            nic_numa.setdefault(dev.numa_node, []).append(dev.name)
    gpus_text = "; ".join(f"node {k if k is not None else '?'}: GPU {ranges(v)}"
                          for k, v in sorted(gpu_numa.items(), key=lambda kv: (kv[0] is None,
                                                                               kv[0] or 0)))
    nics_text = "; ".join(f"node {k if k is not None else '?'}: {', '.join(v)}"
                          for k, v in sorted(nic_numa.items(), key=lambda kv: (kv[0] is None,
                                                                               kv[0] or 0)))
    yield Verdict("info", "NUMA placement of GPUs and RDMA NICs",
                  f"GPUs per NUMA node: {gpus_text}. Active RDMA NICs: {nics_text or 'none'}.")
    if None in gpu_numa and (facts.host.numa_nodes or 1) > 1:
        yield Verdict("info", "NUMA node of some GPUs unknown",
                      f"GPU {ranges(gpu_numa[None])} report no NUMA node (-1) on a host with "
                      f"{facts.host.numa_nodes} NUMA nodes, so ranks cannot be bound to their "
                      "socket.", "enable NUMA reporting (ACPI SRAT/NPS) in the BIOS")
    known_nics = {k for k in nic_numa if k is not None}
    if known_nics:
        far = [i for node, ids in gpu_numa.items() if node is not None and node not in known_nics
               for i in ids]
        if far:
            yield Verdict("warn", f"GPU {ranges(far)} have no active RDMA NIC on their NUMA node",
                          "Their inter-node traffic crosses the CPU interconnect to reach a NIC "
                          "on another socket.",
                          "cable/enable a NIC per socket; otherwise bind those ranks close to a "
                          "NIC and let NCCL/RCCL pick it (NCCL_CROSS_NIC=1 allows cross-NIC "
                          "rings)")
    far_nic = [g for g, link in facts.gpu_nic_link.items() if link == "sys"]
    if far_nic:
        yield Verdict("warn", f"GPU {ranges(far_nic)}: nearest NIC is across the CPU "
                      "interconnect (SYS)",
                      "nvidia-smi topo -m shows no NIC on the same socket as these GPUs.",
                      "move or add NICs so every GPU has one on its PCIe switch or socket")
