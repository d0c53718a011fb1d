"""What an intra-node GPU pair should give: its link type from the topology doctor reads, and
the nominal per-direction bandwidth of that type.

The link type comes from the tools and parsers doctor reads the topology with (amd-smi
topology / rocm-smi --showtopo on AMD, nvidia-smi topo -m on NVIDIA), through the one reader
both use (``hw.topology``), so links and doctor never disagree about a pair. The nominal
figures are conservative per-direction floors per link type, not a platform's peak: one xGMI
link between two MI300X GPUs carries 64 GB/s per direction (AMD CDNA 3 white paper: 128 GB/s
bidirectional per link); NVLink pairs get at least 150 GB/s per direction from NVLink 3 on
(A100: 300 GB/s per direction per GPU, spread over its links; H100 NVLink 4: 450); a PCIe
path gets the ~25 GB/s a Gen4 x16 slot carries in practice. Pairs are flagged only below
``expected_fraction`` (default 50%) of it, so these floors catch a fallback (xGMI pair over
PCIe, a NVLink down), not a few per cent.
"""

from __future__ import annotations

from typing import Any

from collscope.hw.topology import capture_vendor, read_topology

NOMINAL_GBS = {"xgmi": 64.0, "nvlink": 150.0, "pcie": 25.0, "pix": 25.0, "pxb": 25.0,
               "phb": 20.0, "node": 20.0, "sys": 10.0}


def node_topology(capture: dict[str, str]) -> tuple[list[list[str]] | None, dict[int, str]]:
    """(GPU x GPU link types or None, GPU index -> its nearest NIC) from the topology outputs
    (``hw.topology.capture_topology``); the nearest NIC comes from nvidia-smi topo -m's NIC
    columns, where present."""
    found = read_topology(capture, capture_vendor(capture))
    topology = found.topology
    matrix = topology.link_type if topology is not None and topology.gpus > 0 else None
    nearest = {gpu: nics[0] for gpu, nics in found.nearest_nics.items() if nics}
    return matrix, nearest


def pair_link(matrix: list[list[str]] | None, a: Any, b: Any) -> tuple[str | None, float | None]:
    """(link type, nominal GB/s) of GPUs ``a`` and ``b`` (device indices), where known."""
    if matrix is None or not isinstance(a, int) or not isinstance(b, int):
        return None, None
    if not (0 <= a < len(matrix) and 0 <= b < len(matrix[a])):
        return None, None
    kind = matrix[a][b]
    return kind, NOMINAL_GBS.get(kind)
