"""A node's GPU topology, read one way for doctor and links: the commands that print it, and
the GPU x GPU link-type matrix (with each GPU's nearest NICs) parsed from their outputs.

AMD: ``amd-smi topology --json``, else ``rocm-smi --showtopo`` (JSON or text); NVIDIA:
``nvidia-smi topo -m``, whose NIC columns also give each GPU's nearest NICs. The first output
whose matrix has GPUs is the topology. The file names are doctor's bundle format.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.hw.tools import run_command
from collscope.parsers import amd_smi, nvidia_smi, rocm_smi
from collscope.parsers.common import Topology, is_json

AMD_SMI_TOPOLOGY = "amd-smi-topology.txt"
ROCM_SMI_TOPOLOGY = "rocm-smi--showtopo.txt"
NVIDIA_SMI_TOPOLOGY = "nvidia-smi-topo-m.txt"
# Bundle file -> the command that prints it (machine-readable where the tool has a mode).
COMMANDS = {AMD_SMI_TOPOLOGY: ("amd-smi", "topology", "--json"),
            ROCM_SMI_TOPOLOGY: ("rocm-smi", "--showtopo", "--json"),
            NVIDIA_SMI_TOPOLOGY: ("nvidia-smi", "topo", "-m")}
# Which outputs are read, in order, for a vendor (another vendor, or none: all of them).
ORDER = {"amd": (AMD_SMI_TOPOLOGY, ROCM_SMI_TOPOLOGY), "nvidia": (NVIDIA_SMI_TOPOLOGY,)}
# GPU-to-NIC link types of nvidia-smi topo -m, nearest first.
NIC_LINK_RANK = ("pix", "pxb", "phb", "node", "sys")


@dataclass
class NodeTopology:
    topology: Topology | None = None
    source: str | None = None                                  # the file it was read from
    nearest_nics: dict[int, list[str]] = field(default_factory=dict)   # nvidia-smi topo -m
    nic_link: dict[int, str] = field(default_factory=dict)     # each GPU's best NIC link type
    warnings: dict[str, list[str]] = field(default_factory=dict)   # per file, the parsers'


def read_topology(capture: dict[str, str], vendor: str) -> NodeTopology:
    """The topology of a capture (bundle file -> output text) of a ``vendor`` node."""
    found = NodeTopology()
    for name in ORDER.get(vendor) or (ORDER["amd"] + ORDER["nvidia"]):
        if name not in capture:
            continue
        if name == NVIDIA_SMI_TOPOLOGY:
            parsed_nv = nvidia_smi.parse_topo_matrix(capture[name])
            found.warnings[name] = parsed_nv.warnings
            topology = parsed_nv.value.topology
            for gpu in range(len(parsed_nv.value.gpu_nic)):
                found.nearest_nics[gpu] = parsed_nv.value.nics_near(gpu)
                row = [link for link in parsed_nv.value.gpu_nic[gpu] if link != "unknown"]
                if row:
                    found.nic_link[gpu] = min(row, key=lambda x: NIC_LINK_RANK.index(x)
                                              if x in NIC_LINK_RANK else len(NIC_LINK_RANK))
        else:
            parse = amd_smi.parse_topology if name == AMD_SMI_TOPOLOGY \
                else rocm_smi.parse_json_topology if is_json(capture[name]) \
                else rocm_smi.parse_showtopo
            parsed = parse(capture[name])
            found.warnings[name] = parsed.warnings
            topology = parsed.value
        if topology.gpus > 0:
            found.topology, found.source = topology, name
            return found
    return found


def capture_vendor(capture: dict[str, str]) -> str:
    """The vendor a capture of topology outputs alone shows: amd, nvidia or none."""
    if AMD_SMI_TOPOLOGY in capture or ROCM_SMI_TOPOLOGY in capture:
        return "amd"
    return "nvidia" if NVIDIA_SMI_TOPOLOGY in capture else "none"


def capture_topology(timeout_s: float) -> dict[str, str]:
    """Run the topology commands on this node (absent tools cost nothing): file -> output."""
    capture = {}
    for name, argv in COMMANDS.items():
        _run, text = run_command(argv, timeout_s, None, name)
        if text:
            capture[name] = text
    return capture
