"""What an intra-node GPU pair should give: its link type from the topology doctor reads, and
the nominal per-direction bandwidth of that type.

The link type comes from doctor's own tools and parsers (amd-smi topology / rocm-smi
--showtopo on AMD, nvidia-smi topo -m on NVIDIA) through ``doctor.facts.facts_from``, so
links and doctor never disagree about a pair. The nominal figures are conservative
per-direction floors per link type, not a platform's peak: one xGMI link between two MI300X
GPUs carries 64 GB/s per direction (AMD CDNA 3 white paper: 128 GB/s bidirectional per
link); NVLink pairs get at least 150 GB/s per direction from NVLink 3 on (A100: 300 GB/s
per direction per GPU, spread over its links; H100 NVLink 4: 450); a PCIe path gets the
~25 GB/s a Gen4 x16 slot carries in practice. Pairs are flagged only below
``expected_fraction`` (default 50%) of it, so these floors catch a fallback (xGMI pair over
PCIe, a NVLink down), not a few per cent.
"""

from __future__ import annotations

from typing import Any

NOMINAL_GBS = {"xgmi": 64.0, "nvlink": 150.0, "pcie": 25.0, "pix": 25.0, "pxb": 25.0,
               "phb": 20.0, "node": 20.0, "sys": 10.0}
TOPOLOGY_FILES = ("amd-smi-topology.txt", "rocm-smi--showtopo.txt", "nvidia-smi-topo-m.txt")


def node_topology(capture: dict[str, str]) -> tuple[list[list[str]] | None, dict[int, str]]:
    """(GPU x GPU link types or None, GPU index -> its nearest NIC) from a doctor capture; the
    nearest NIC comes from nvidia-smi topo -m's NIC columns, where present."""
    from collscope.doctor.facts import facts_from

    facts = facts_from(capture)
    topology = facts.topology
    matrix = topology.link_type if topology is not None and topology.gpus > 0 else None
    nearest = {gpu: nics[0] for gpu, nics in facts.gpu_nearest_nic.items() if nics}
    return matrix, nearest


def capture_topology(timeout_s: float) -> dict[str, str]:
    """Run doctor's topology tools on this node (absent tools cost nothing)."""
    from collscope.doctor.probes import TOOLS, run_tool

    capture = {}
    for spec in TOOLS:
        if spec.file in TOPOLOGY_FILES:
            _run, text = run_tool(spec, timeout_s)
            if text:
                capture[spec.file] = text
    return capture


def pair_link(matrix: list[list[str]] | None, a: Any, b: Any) -> tuple[str | None, float | None]:
    """(link type, nominal GB/s) of GPUs ``a`` and ``b`` (device indices), where known."""
    if matrix is None or not isinstance(a, int) or not isinstance(b, int):
        return None, None
    if not (0 <= a < len(matrix) and 0 <= b < len(matrix[a])):
        return None, None
    kind = matrix[a][b]
    return kind, NOMINAL_GBS.get(kind)
