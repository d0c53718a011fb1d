"""Pure rules: Facts -> findings, each with what was found, why it matters, and the fix.

Every rule is registered with an id, an area and a long explanation (``collscope doctor
--explain ID``). A rule returns ``Verdict``s; the registry stamps them with the rule's id and
area. A rule that crashes on odd facts becomes one "warn" finding naming the rule rather than
taking the whole report down (property tests make sure none does).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from collscope.doctor import envlint
from collscope.doctor.facts import Facts, RdmaDevice, RdmaPort
from collscope.doctor.probes import TOOLS

LEVELS = ("fail", "warn", "info", "ok")          # worst first
AREAS = ("gpu", "torch", "topology", "host", "network", "ucx", "nccl", "env", "selftest",
         "cluster", "tools")
VISIBLE_DEVICES = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                   "GPU_DEVICE_ORDINAL")
FAST_LINKS = ("self", "xgmi", "nvlink")
# Platforms whose GPUs are meant to talk over xGMI / NVLink inside a node (OAM/SXM parts).
# PCIe add-in variants ("H100 PCIe", "A100-PCIE") are excluded by the second pattern.
FABRIC_PLATFORMS = (
    (re.compile(r"MI2[05]0|MI30[08]|MI32[05]|MI35[05]", re.I), "xgmi"),
    (re.compile(r"\b(?:H100|H200|H800|H20|A100|A800|B100|B200|B300|GB200|GB300)\b", re.I),
     "nvlink"),
)
PCIE_VARIANT = re.compile(r"pcie|\bnvl\b", re.I)


@dataclass
class Finding:
    """One result of one rule: ``level`` is ok, info, warn or fail."""

    id: str
    level: str
    area: str
    title: str
    detail: str = ""
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Verdict(NamedTuple):
    level: str
    title: str
    detail: str = ""
    fix: str = ""


Check = Callable[[Facts], Iterable[Verdict]]


@dataclass(frozen=True)
class Rule:
    id: str
    area: str
    explanation: str
    check: Check | None   # None: computed elsewhere (cluster differences)


RULES: dict[str, Rule] = {}


def rule(rule_id: str, area: str, explanation: str) -> Callable[[Check], Check]:
    """Register a check under ``rule_id``; ``explanation`` is what --explain prints."""
    assert area in AREAS, area

    def register(check: Check) -> Check:
        RULES[rule_id] = Rule(rule_id, area, explanation.strip(), check)
        return check

    return register


def register_external(rule_id: str, area: str, explanation: str) -> None:
    """A rule whose findings are produced outside run_checks (e.g. across nodes)."""
    RULES[rule_id] = Rule(rule_id, area, explanation.strip(), None)


def run_checks(facts: Facts, only: Iterable[str] | None = None) -> list[Finding]:
    """Every registered rule (or those in ``only``) on ``facts``, worst first."""
    wanted = None if only is None else set(only)
    findings = []
    for entry in RULES.values():
        if entry.check is None or (wanted is not None and entry.id not in wanted):
            continue
        try:
            for verdict in entry.check(facts):
                findings.append(Finding(entry.id, verdict.level, entry.area, verdict.title,
                                        verdict.detail, verdict.fix))
        except Exception as error:  # a rule bug must not hide every other finding
            findings.append(Finding(entry.id, "warn", entry.area,
                                    f"check {entry.id} could not run: {type(error).__name__}",
                                    f"{error} (a collscope bug: please report it with the "
                                    "bundle from --collect)"))
    return sort_findings(findings)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Areas with the worst finding first; inside an area, worst first (stable)."""
    def level_rank(level: str) -> int:
        return LEVELS.index(level) if level in LEVELS else len(LEVELS)

    # Areas with a failure come first, then areas with a warning, then the rest in the
    # fixed reading order (info and ok do not reorder areas).
    worst: dict[str, int] = {}
    for f in findings:
        worst[f.area] = min(worst.get(f.area, 99), level_rank(f.level), LEVELS.index("info"))

    def key(f: Finding) -> tuple[int, int, int]:
        area = AREAS.index(f.area) if f.area in AREAS else len(AREAS)
        return worst[f.area], area, level_rank(f.level)

    return sorted(findings, key=key)


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when nothing fails, 1 when a check fails."""
    return 1 if any(f.level == "fail" for f in findings) else 0


def explain(rule_id: str) -> str | None:
    entry = RULES.get(rule_id)
    return None if entry is None else f"{entry.id} ({entry.area})\n\n{entry.explanation}\n"


# --------------------------------------------------------------------------- formatting


def human_bytes(value: int | None) -> str:
    if value is None:
        return "unknown"
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.0f} {unit}" if value % size == 0 or value >= 10 * size \
                else f"{value / size:.1f} {unit}"
    return f"{value} B"


def ranges(numbers: Iterable[int]) -> str:
    """"0-3,6" from [0, 1, 2, 3, 6]."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _listing(items: list[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _gpu_count(facts: Facts) -> int:
    return len(facts.gpus) or (facts.torch.gpu_count if facts.torch else 0)


# --------------------------------------------------------------------------- GPUs


@rule("gpu.inventory", "gpu", """
Which GPUs this node has, as the vendor tools report them (amd-smi / rocm-smi / rocminfo on
AMD, nvidia-smi on NVIDIA, the vendor library when installed): count, model, memory, driver
and ROCm or CUDA version. With no GPU, collscope and torch.distributed use gloo on the CPU: a
valid setup for learning and CI, not for training. GPUs visible on the PCI bus that no tool
and no torch sees usually mean a missing or failed driver (amdgpu / nvidia kernel module).
A node with mixed GPU models makes every collective run at the pace of the slowest GPU.
""")
def check_gpu_inventory(facts: Facts) -> Iterable[Verdict]:
    if not facts.gpus and not (facts.torch and facts.torch.gpu_count):
        pci_gpus = [d.address for d in facts.pci if d.is_gpu]
        if pci_gpus:
            yield Verdict("warn", f"{len(pci_gpus)} GPU(s) on the PCI bus, but no driver tool or "
                          "torch sees any",
                          f"PCI devices {_listing(pci_gpus)} are GPUs, yet amd-smi/rocm-smi/"
                          "nvidia-smi report none and torch counts 0: collectives would run "
                          "on the CPU.",
                          "check the kernel driver: `lsmod | grep -e amdgpu -e nvidia`, "
                          "`dmesg | grep -i -e amdgpu -e nvrm`; install ROCm or the NVIDIA "
                          "driver")
            return
        yield Verdict("info", "No GPU found: gloo on the CPU will be used",
                      "No AMD or NVIDIA GPU is visible to the vendor tools or to torch, so "
                      "collscope (and torch.distributed's auto choice) uses the gloo backend on "
                      "CPU ranks. Fine for trying collscope; GPU clusters should show their "
                      "GPUs here.", "")
        return
    gpus = facts.gpus
    names = Counter(g.name or "unknown model" for g in gpus)
    count = len(gpus) or (facts.torch.gpu_count if facts.torch else 0)
    models = ", ".join(f"{n} x {name}" for name, n in names.items()) or \
        ", ".join(sorted(set(facts.torch.gpu_names if facts.torch else [])))
    memory = sorted({g.memory_bytes for g in gpus if g.memory_bytes})
    version = _stack_version(facts)
    sizes = ", ".join(human_bytes(m) for m in memory) or "unknown"
    detail = (f"{count} GPU(s): {models}; memory {sizes}"
              f" each; driver {facts.driver_version or 'unknown'}; {version}"
              f" (source: {facts.gpu_source or 'torch'}).")
    yield Verdict("ok", f"{count} GPU(s): {models}", detail)
    if len([n for n in names if n != "unknown model"]) > 1:
        yield Verdict("warn", "Mixed GPU models in one node",
                      f"Found {models}. Collectives progress at the pace of the slowest GPU "
                      "and RCCL/NCCL tuning assumes identical devices.",
                      "run one job per GPU model (HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES)")


def _stack_version(facts: Facts) -> str:
    if facts.vendor == "amd":
        rocm = facts.host.rocm_version or (facts.nccl_log.rocm_version if facts.nccl_log else None)
        hip = facts.torch.hip if facts.torch else None
        return f"ROCm {rocm or 'unknown'}" + (f" (torch built for HIP {hip})" if hip else "")
    cuda = (facts.torch.cuda if facts.torch else None) or \
        (facts.nccl_log.cuda_version if facts.nccl_log else None)
    return f"CUDA {cuda or 'unknown'}"


@rule("gpu.torch-visible", "gpu", """
torch must see the same GPUs as the vendor tool, or ranks will be bound to the wrong devices
(or to none). The usual causes: HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES (AMD; ROCR_ applies
first, then HIP_ indexes into what is left) or CUDA_VISIBLE_DEVICES left set in a job
script or by a scheduler; missing permissions on /dev/kfd and /dev/dri/renderD* (the user must
be in the video and render groups); a container started without the devices (--device=/dev/kfd
--device=/dev/dri on ROCm, --gpus all on NVIDIA).
""")
def check_torch_visible(facts: Facts) -> Iterable[Verdict]:
    torch = facts.torch
    if torch is None or (torch.error and not torch.version) or not facts.gpus:
        return
    if not _build_matches(facts):
        return  # torch.build says why
    vendor_n, torch_n = len(facts.gpus), torch.gpu_count
    limits = {k: facts.env[k] for k in VISIBLE_DEVICES if k in facts.env}
    if torch_n == vendor_n:
        yield Verdict("ok", f"torch sees all {vendor_n} GPU(s)")
        return
    shown = ", ".join(f"{k}={v}" for k, v in limits.items())
    if limits:
        yield Verdict("warn", f"torch sees {torch_n} of {vendor_n} GPUs; {shown} is set",
                      f"The vendor tool reports {vendor_n} GPUs but {shown} hides some from "
                      "torch. Intended for a one-GPU-per-process launcher, a mistake in a job "
                      "script.",
                      "unset " + " ".join(limits) + " (or list every device, e.g. "
                      f"{next(iter(limits))}={','.join(map(str, range(vendor_n)))})")
        return
    devices = "/dev/kfd and /dev/dri/renderD*" if facts.vendor == "amd" else "/dev/nvidia*"
    yield Verdict("fail", f"torch sees {torch_n} of {vendor_n} GPUs",
                  f"The vendor tool reports {vendor_n} GPUs, torch {torch_n}, and no "
                  "*_VISIBLE_DEVICES variable explains it: ranks cannot use the missing GPUs.",
                  f"check access to {devices} (`groups` should list video and render), the "
                  "container's device flags, and `dmesg` for GPU errors")


def _build_matches(facts: Facts) -> bool:
    torch = facts.torch
    if torch is None:
        return True
    if facts.vendor == "amd":
        return bool(torch.hip)
    if facts.vendor == "nvidia":
        return bool(torch.cuda) and not torch.hip
    return True


@rule("torch.build", "torch", """
The torch build decides which GPUs and which collective library can be used: a ROCm build
(torch.version.hip set) uses RCCL on AMD GPUs, a CUDA build NCCL on NVIDIA GPUs, a CPU build
only gloo. A CPU or wrong-vendor build on a GPU node silently trains on the CPU or fails at
init_process_group("nccl"). Reported: torch version, HIP/CUDA version, the RCCL/NCCL version
torch links, and the torch.distributed backends available.
""")
def check_torch_build(facts: Facts) -> Iterable[Verdict]:
    torch = facts.torch
    if torch is None:
        yield Verdict("info", "torch build not captured",
                      "The capture has no torch.json (a hand-assembled bundle?).", "")
        return
    if not torch.version:
        yield Verdict("fail", "torch cannot be imported", torch.error or "import failed",
                      "install torch into this environment (`pip install torch`, the ROCm "
                      "wheel on AMD)")
        return
    kind = f"HIP {torch.hip}" if torch.hip else f"CUDA {torch.cuda}" if torch.cuda else "CPU-only"
    lib = ("RCCL" if torch.hip else "NCCL") + f" {torch.nccl_version}" if torch.nccl_version \
        else ("no RCCL/NCCL" if "nccl" not in torch.backends else "RCCL/NCCL version unknown")
    detail = (f"torch {torch.version}, {kind} build, {lib}; backends: "
              f"{', '.join(torch.backends) or 'none'}; sees {torch.gpu_count} GPU(s).")
    if _build_matches(facts):
        yield Verdict("ok" if facts.vendor != "none" or not torch.hip and not torch.cuda
                      else "info", f"torch {torch.version} ({kind})", detail)
        return
    want = "ROCm (HIP)" if facts.vendor == "amd" else "CUDA"
    yield Verdict("fail", f"torch {torch.version} is a {kind} build on a node with "
                  f"{facts.vendor.upper()} GPUs",
                  detail + f" This node needs a {want} build of torch to use its GPUs.",
                  "install the matching wheel, e.g. `pip install torch --index-url "
                  "https://download.pytorch.org/whl/rocm6.4`" if facts.vendor == "amd" else
                  "install a CUDA build of torch (`pip install torch`)")


# --------------------------------------------------------------------------- topology


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
        if _gpu_count(facts) >= 2:
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
    shown = _listing([f"{i}-{j} ({link})" for i, j, link in slow])
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


# --------------------------------------------------------------------------- host


@rule("host.numa-balancing", "host", """
Automatic NUMA balancing (/proc/sys/kernel/numa_balancing = 1) makes the kernel unmap and
migrate pages of running processes to the node that touches them. On AMD Instinct hosts the
page faults it injects slow down GPU kernels and DMA; AMD's MI300X workload-tuning guide says
to disable it: `sudo sysctl -w kernel.numa_balancing=0` (persist it in /etc/sysctl.d/).
""")
def check_numa_balancing(facts: Facts) -> Iterable[Verdict]:
    value = facts.host.numa_balancing
    amd = facts.vendor == "amd"
    if value is None:
        if amd:
            yield Verdict("info", "NUMA auto-balancing setting not captured",
                          "/proc/sys/kernel/numa_balancing was not read.", "")
        return
    if value == 0:
        yield Verdict("ok", "NUMA auto-balancing is off")
    elif amd:
        yield Verdict("warn", f"NUMA auto-balancing is on (numa_balancing={value})",
                      "AMD's MI300X tuning guide asks for 0: page migration faults stall GPU "
                      "work and DMA.",
                      "sudo sysctl -w kernel.numa_balancing=0 && echo "
                      "'kernel.numa_balancing=0' | sudo tee /etc/sysctl.d/90-numa-balancing.conf")
    else:
        yield Verdict("info", f"NUMA auto-balancing is on (numa_balancing={value})",
                      "Harmless on CPU-only hosts; AMD GPU hosts should set it to 0.", "")


@rule("host.iommu", "host", """
With the IOMMU translating every DMA (the default when it is enabled), GPU peer-to-peer and
GPU-NIC transfers go through I/O page tables, which costs bandwidth and can break P2P on AMD
GPUs. AMD's ROCm install and MI300X tuning guides ask for pass-through mode, `iommu=pt` on
the kernel command line (on Intel CPUs together with `intel_iommu=on`). Checked on AMD GPU
hosts from /proc/cmdline and /sys/kernel/iommu_groups.
""")
def check_iommu(facts: Facts) -> Iterable[Verdict]:
    cmdline = facts.host.cmdline
    if facts.vendor == "none" or cmdline is None:
        return
    tokens = set(cmdline.split())
    if "iommu=pt" in tokens:
        yield Verdict("ok", "IOMMU in pass-through mode (iommu=pt)")
        return
    if tokens & {"iommu=off", "amd_iommu=off", "intel_iommu=off"} or facts.host.iommu_groups == 0:
        yield Verdict("info", "IOMMU is off",
                      "No IOMMU translation: DMA is direct. (iommu=pt keeps the IOMMU for "
                      "isolation without the cost.)", "")
        return
    level = "warn" if facts.vendor == "amd" else "info"
    intel = "intel_iommu=on " if (facts.host.cpu_vendor or "").startswith("GenuineIntel") else ""
    yield Verdict(level, "IOMMU translates DMA: no iommu=pt on the kernel command line",
                  f"/proc/cmdline: {cmdline[:200]}. GPU P2P and GPU-NIC DMA pay for address "
                  "translation; AMD recommends pass-through mode.",
                  f"add `{intel}iommu=pt` to GRUB_CMDLINE_LINUX in /etc/default/grub, run "
                  "`sudo update-grub` (or grub2-mkconfig) and reboot")


@rule("host.pcie-acs", "host", """
PCIe Access Control Services (ACS) with request/completion redirect enabled on a bridge
forces peer-to-peer traffic between devices below it (GPU to GPU, GPU to NIC for GPUDirect
RDMA) up to the root complex, which cuts P2P bandwidth or breaks it. NCCL's and RCCL's
troubleshooting guides ask to disable it on bare metal (keep it where VMs rely on it for
isolation). Checked in `lspci -vvv` (ACSCtl: ReqRedir+ / CmpltRedir+); lspci needs root to
show capabilities.
""")
def check_acs(facts: Facts) -> Iterable[Verdict]:
    acs = facts.acs
    if not acs.checked:
        return
    redirecting = [b for b in acs.bridges if b.redirects]
    if redirecting:
        level = "warn" if _gpu_count(facts) >= 1 else "info"
        first = redirecting[0].address
        yield Verdict(level, f"ACS redirect enabled on {len(redirecting)} PCIe bridge(s)",
                      f"Bridges {_listing([b.address for b in redirecting])} redirect P2P "
                      "requests to the root complex: GPU peer-to-peer and GPUDirect RDMA "
                      "below them lose bandwidth.",
                      f"disable ACS in the BIOS, or per bridge until reboot: `sudo setpci -s "
                      f"{first} ECAP_ACS+0x6.w=0000`")
    elif acs.access_denied and not acs.bridges:
        yield Verdict("info", "ACS not readable: lspci hides PCIe capabilities without root",
                      "", "run `sudo collscope doctor` to check ACS")
    elif acs.bridges:
        yield Verdict("ok", f"ACS redirect off on all {len(acs.bridges)} bridge(s) with ACS")


@rule("host.memlock", "host", """
RDMA (InfiniBand, RoCE) pins the buffers it registers, and pinned memory counts against the
locked-memory limit (ulimit -l). A limit below "unlimited" makes NCCL/RCCL or UCX fail to
register buffers (ibv_reg_mr: Cannot allocate memory) or fall back to slower paths. Set it
in /etc/security/limits.conf (`* soft memlock unlimited`, `* hard memlock unlimited`), in
Docker with --ulimit memlock=-1:-1, and make sure Slurm propagates it.
""")
def check_memlock(facts: Facts) -> Iterable[Verdict]:
    soft = facts.host.memlock_soft
    if soft is None:
        return
    shown = "unlimited" if soft == -1 else human_bytes(soft)
    if soft == -1:
        yield Verdict("ok", "Locked-memory limit is unlimited")
    elif facts.rdma:
        yield Verdict("warn", f"Locked-memory limit is {shown} on a node with RDMA devices",
                      "RDMA memory registration pins buffers; a finite ulimit -l makes it fail "
                      "for large or many buffers.",
                      "`ulimit -l unlimited` (limits.conf: `* soft memlock unlimited` and "
                      "`* hard memlock unlimited`; docker: --ulimit memlock=-1:-1)")
    else:
        yield Verdict("info", f"Locked-memory limit is {shown}",
                      "Matters only for RDMA, and this node has no RDMA device.", "")


# --------------------------------------------------------------------------- network


def _describe_iface(iface: Any) -> str:
    parts = [iface.name, iface.operstate or "state?"]
    if iface.speed_mbps:
        parts.append(f"{iface.speed_mbps} Mb/s")
    if iface.mtu:
        parts.append(f"mtu {iface.mtu}")
    if iface.addresses:
        parts.append("(" + ", ".join(iface.addresses[:2]) + ")")
    return " ".join(parts)


@rule("network.interfaces", "network", """
The IP interfaces with their state, speed and MTU (/sys/class/net). NCCL/RCCL bootstrap and
the NET/Socket transport, gloo and torch's TCPStore use them; NCCL_SOCKET_IFNAME and
GLOO_SOCKET_IFNAME must name interfaces from this list that are up and reach the other
nodes. Only loopback being up means only single-node jobs can work.
""")
def check_interfaces(facts: Facts) -> Iterable[Verdict]:
    if not facts.interfaces:
        yield Verdict("info", "No network interface list captured", "", "")
        return
    described = [_describe_iface(i) for i in facts.interfaces]
    up = [i for i in facts.interfaces if i.is_up and i.name != "lo"]
    yield Verdict("info", f"{len(facts.interfaces)} interface(s), {len(up)} up besides lo",
                  "; ".join(described) + ".")
    if not up:
        yield Verdict("warn", "No network interface is up besides loopback",
                      "Ranks on other nodes cannot be reached.",
                      "bring the cluster interface up (`ip link set <if> up`)")


def _port_text(dev: RdmaDevice, port: RdmaPort) -> str:
    return (f"{dev.name}:{port.port} {port.state or 'state?'} {port.rate or ''} "
            f"{port.link_layer or ''}").strip()


@rule("network.rdma-ports", "network", """
RDMA devices (InfiniBand or RoCE; /sys/class/infiniband, else ibv_devinfo -v) with each
port's state, rate and link layer. NCCL/RCCL use NET/IB over ACTIVE ports; a DOWN port that a
job selects (NCCL_IB_HCA) makes it fail or fall back to TCP sockets, and ports of different
rates in one job make the slowest one set the pace. No RDMA device means inter-node
collectives go over TCP sockets (NET/Socket), typically 10x slower.
""")
def check_rdma_ports(facts: Facts) -> Iterable[Verdict]:
    if not facts.rdma:
        yield Verdict("info", "No RDMA device (InfiniBand/RoCE)",
                      "Inter-node NCCL/RCCL traffic would use TCP sockets.", "")
        return
    ports = [(d, p) for d in facts.rdma for p in d.ports]
    active = [(d, p) for d, p in ports if p.active]
    yield Verdict("info", f"{len(facts.rdma)} RDMA device(s), {len(active)} of {len(ports)} "
                  "port(s) active",
                  "; ".join(_port_text(d, p) for d, p in ports) + f" (from {facts.rdma_source}).")
    down = [(d, p) for d, p in ports if not p.active]
    if ports and not active:
        yield Verdict("warn", "No RDMA port is active",
                      "NCCL/RCCL cannot use InfiniBand/RoCE and falls back to TCP sockets.",
                      "check cables and the switch/subnet manager (`ibstat`, `ibv_devinfo`); "
                      "RoCE ports need their netdev up")
    elif down:
        names = [f"{d.name}:{p.port} {p.state or '?'} ({p.phys_state or '?'})" for d, p in down]
        yield Verdict("warn", f"{len(down)} RDMA port(s) not active",
                      f"{_listing(names)}. If a job selects them, it fails or falls back to "
                      "sockets.",
                      "fix the link, or keep NCCL away from it: NCCL_IB_HCA=^=" +
                      ",".join(sorted({d.name for d, _ in down})))
    rates = {p.rate for _, p in active if p.rate}
    if len(rates) > 1:
        yield Verdict("warn", "Active RDMA ports run at different rates",
                      f"Rates: {_listing(sorted(rates))}. Rings through the slowest port set "
                      "the pace.", "check link speeds/cables; exclude slow ports via NCCL_IB_HCA")


@rule("network.roce-gids", "network", """
RoCE ports (link layer Ethernet) address peers by GID; RoCE v2 GIDs carry the IP address of
the port's netdev. Without a RoCE v2 GID (no IP on the netdev) NCCL/RCCL cannot use the port,
and NCCL_IB_GID_INDEX pointing at a v1 or missing entry breaks routing across subnets.
Reported: per RoCE port, the RoCE v2 GID indices with their addresses.
""")
def check_roce_gids(facts: Facts) -> Iterable[Verdict]:
    roce = [(d, p) for d in facts.rdma for p in d.ports
            if (p.link_layer or "").lower() == "ethernet"]
    if not roce:
        return
    wanted = facts.env.get("NCCL_IB_GID_INDEX")
    for dev, port in roce:
        v2 = [g for g in port.gids if "v2" in (g.type or "").lower()]
        where = f"{dev.name} port {port.port}"
        if not v2:
            gids = _listing([f"{g.index} {g.type or '?'}" for g in port.gids]) or "none"
            yield Verdict("warn" if port.active else "info", f"{where}: no RoCE v2 GID",
                          f"GIDs: {gids}. RoCE v2 needs an IP address on the port's netdev.",
                          "assign an IP address to the port's network interface")
            continue
        best = next((g for g in v2 if g.ipv4), v2[0])
        yield Verdict("info", f"{where}: RoCE v2 GID index {best.index}",
                      "RoCE v2 GIDs: " + _listing([f"{g.index} {g.gid}" +
                                                   (f" ({g.ndev})" if g.ndev else "")
                                                   for g in v2]) + ".")
        if wanted is not None:
            chosen = next((g for g in port.gids if str(g.index) == wanted.strip()), None)
            if chosen is None or "v2" not in (chosen.type or "").lower():
                yield Verdict("warn", f"{where}: NCCL_IB_GID_INDEX={wanted} is not a RoCE v2 GID",
                              f"Entry {wanted} is {'missing' if chosen is None else chosen.type}.",
                              f"export NCCL_IB_GID_INDEX={best.index}")


# --------------------------------------------------------------------------- UCX


@rule("ucx.build", "ucx", """
UCX carries MPI and UCC traffic (and GPU buffers through them when built with ROCm or CUDA
support). `ucx_info -v` shows how it was configured, `ucx_info -d` its transports and memory
domains. A UCX without ROCm support on a ROCm host stages every GPU buffer through host memory
(or rejects it), so GPU-aware MPI collectives crawl: rebuild UCX with --with-rocm (or use the
UCX shipped for ROCm). Same for CUDA on NVIDIA hosts.
""")
def check_ucx(facts: Facts) -> Iterable[Verdict]:
    version = facts.ucx_version
    if version is None:
        run = facts.tools.get("ucx_info-v.txt")
        if run is not None and run.status == "missing":
            yield Verdict("info", "UCX not installed (ucx_info not found)",
                          "UCX matters only for MPI/UCC transports.", "")
        return
    domains = facts.ucx_devices.memory_domains if facts.ucx_devices else []
    transports = sorted({t.name for t in (facts.ucx_devices.transports
                                          if facts.ucx_devices else [])})
    rocm = version.with_rocm or any("rocm" in m.name or "rocm" in m.memory_types
                                    for m in domains)
    cuda = version.with_cuda or any("cuda" in m.name or "cuda" in m.memory_types
                                    for m in domains)
    detail = (f"UCX {version.version or 'unknown'}; ROCm support: {'yes' if rocm else 'no'}; "
              f"CUDA support: {'yes' if cuda else 'no'}; transports: "
              f"{', '.join(transports) or 'not captured (ucx_info -d)'}.")
    yield Verdict("info", f"UCX {version.version or 'unknown'}", detail)
    if facts.vendor == "amd" and not rocm:
        yield Verdict("warn", "UCX lacks ROCm support on a ROCm host",
                      detail + " GPU buffers handed to UCX (GPU-aware MPI, UCC) are staged "
                      "through host memory or rejected.",
                      "rebuild UCX with `./configure --with-rocm=/opt/rocm` (or install a "
                      "ROCm-enabled UCX) and point LD_LIBRARY_PATH at it")
    elif facts.vendor == "nvidia" and not cuda:
        yield Verdict("warn", "UCX lacks CUDA support on an NVIDIA host", detail,
                      "rebuild UCX with `./configure --with-cuda=/usr/local/cuda`")


# --------------------------------------------------------------------------- NCCL log


@rule("nccl.log", "nccl", """
An NCCL_DEBUG=INFO log (nccl-debug.log in a bundle, or the one the GPU self-test writes) says
what RCCL/NCCL actually chose: its version, the network (IB, or the slow Socket fallback),
the NICs, channels and transports. Flagged: more than one library version among the ranks
(a classic cause of hangs), Socket chosen on a node that has RDMA devices, and WARN lines.
""")
def check_nccl_log(facts: Facts) -> Iterable[Verdict]:
    log = facts.nccl_log
    if log is None:
        return
    lib = log.library or "NCCL"
    nics = ", ".join(sorted({n.name for n in log.nics})) or "none listed"
    transports = ", ".join(f"{kind} x{n}" for kind, n in sorted(
        log.transport_kind_counts.items())) or "not logged"
    yield Verdict("info", f"{lib} {log.version or 'version unknown'}: network "
                  f"{log.network or 'not logged'}",
                  f"NICs: {nics}; channels: {log.nchannels or log.coll_channels or '?'}; "
                  f"connections per transport: {transports}.")
    if len(log.versions_seen) > 1:
        yield Verdict("fail", f"Ranks run different {lib} versions",
                      f"Versions in the log: {', '.join(log.versions_seen)}. Mixed versions "
                      "disagree on protocols and hang or corrupt collectives.",
                      "install one RCCL/NCCL version on every node (same container image)")
    if log.uses_socket_only and (facts.rdma or log.ib_no_device):
        yield Verdict("warn", f"{lib} chose TCP sockets (NET/Socket)",
                      "The log says 'Using network Socket'" +
                      (" although this node has RDMA devices" if facts.rdma else
                       " because NET/IB found no device") + ".",
                      "check NCCL_IB_HCA / NCCL_IB_DISABLE and the RDMA ports; for RCCL over "
                      "RoCE make sure the rdma-core/verbs libraries are in the container")
    if log.log_warnings:
        yield Verdict("warn", f"{len(log.log_warnings)} WARN line(s) in the {lib} log",
                      "; ".join(w[:160] for w in log.log_warnings[:3]), "")


# --------------------------------------------------------------------------- environment


def _interface_names(facts: Facts) -> list[str]:
    return [i.name for i in facts.interfaces]


@rule("env.socket-ifname", "env", """
NCCL_SOCKET_IFNAME picks the IP interfaces NCCL/RCCL use for bootstrap and sockets. Syntax
(NCCL docs): a comma-separated list of prefixes (`eth` = eth0, eth1, ...); a leading `^`
excludes instead (`^docker,lo`); a leading `=` matches exact names (`=eth0`, `^=docker0`).
If it selects no existing interface, NCCL/RCCL fail at init ("no socket interface found") or
hang in bootstrap; if it selects a down or wrong interface, ranks cannot reach each other.
""")
def check_socket_ifname(facts: Facts) -> Iterable[Verdict]:
    value = facts.env.get("NCCL_SOCKET_IFNAME")
    if value is None:
        return
    yield from _check_nccl_ifname(facts, "NCCL_SOCKET_IFNAME", value)


def _check_nccl_ifname(facts: Facts, var: str, value: str) -> Iterable[Verdict]:
    names = _interface_names(facts)
    if not names:
        yield Verdict("info", f"{var}={value} not checked: no interface list captured")
        return
    parsed = envlint.parse_name_list(value)
    if not parsed.entries:
        yield Verdict("fail", f"{var} is empty", f"{var}={value!r} names no interface.",
                      f"unset {var}, or set it to an interface such as {_suggest(facts)}")
        return
    chosen = [n for n in names if parsed.selects(n) and (n != "lo" or not parsed.exclude)]
    have = ", ".join(names)
    if not chosen:
        what = "excludes every interface" if parsed.exclude else "matches no interface"
        yield Verdict("fail", f"{var}={value} {what} here",
                      f"Interfaces on this node: {have}. NCCL/RCCL find no socket interface "
                      "and fail at init (or hang in bootstrap).",
                      f"export {var}={_suggest(facts)}")
        return
    up = [n for n in chosen if any(i.name == n and i.is_up for i in facts.interfaces)]
    if not up:
        yield Verdict("warn", f"{var}={value} selects only interfaces that are down",
                      f"Selected: {', '.join(chosen)}.", f"export {var}={_suggest(facts)}")
        return
    unmatched = parsed.unmatched(names) if not parsed.exclude else []
    if unmatched:
        yield Verdict("info", f"{var}: entries {', '.join(e.name for e in unmatched)} match "
                      "nothing here",
                      f"Selected: {', '.join(chosen)}. Fine if other nodes have them.", "")
    yield Verdict("ok", f"{var}={value} selects {', '.join(chosen)}")


def _suggest(facts: Facts) -> str:
    """An interface worth naming in a fix: up, not loopback, fastest first."""
    candidates = sorted((i for i in facts.interfaces if i.is_up and i.name != "lo"),
                        key=lambda i: -(i.speed_mbps or 0))
    return candidates[0].name if candidates else "<interface>"


@rule("env.gloo-ifname", "env", """
GLOO_SOCKET_IFNAME picks the interfaces of torch's gloo backend. Unlike NCCL's variable it
takes exact interface names only, comma-separated (torch opens one gloo device per name); no
prefixes, no `^`/`=`. A name that does not exist makes init_process_group("gloo") raise on
this node.
""")
def check_gloo_ifname(facts: Facts) -> Iterable[Verdict]:
    value = facts.env.get("GLOO_SOCKET_IFNAME")
    if value is None:
        return
    names = _interface_names(facts)
    if not names:
        yield Verdict("info", f"GLOO_SOCKET_IFNAME={value} not checked: no interface list")
        return
    if value.strip().startswith(("^", "=")):
        yield Verdict("fail", f"GLOO_SOCKET_IFNAME={value} uses NCCL's ^/= syntax",
                      "gloo takes exact interface names; it looks for an interface literally "
                      f"named {value.split(',')[0]!r}.",
                      f"export GLOO_SOCKET_IFNAME={_suggest(facts)}")
        return
    wanted = [w.strip() for w in value.split(",") if w.strip()]
    missing = [w for w in wanted if w not in names]
    if not wanted or missing:
        yield Verdict("fail", f"GLOO_SOCKET_IFNAME names {', '.join(missing) or 'nothing'} "
                      "which is not an interface here",
                      f"Interfaces on this node: {', '.join(names)}. gloo raises at "
                      "init_process_group.", f"export GLOO_SOCKET_IFNAME={_suggest(facts)}")
        return
    down = [w for w in wanted if not any(i.name == w and i.is_up for i in facts.interfaces)]
    if down:
        yield Verdict("warn", f"GLOO_SOCKET_IFNAME names interface(s) that are down: "
                      f"{', '.join(down)}", "", f"export GLOO_SOCKET_IFNAME={_suggest(facts)}")
        return
    yield Verdict("ok", f"GLOO_SOCKET_IFNAME={value} exists and is up")


@rule("env.ib-hca", "env", """
NCCL_IB_HCA picks the RDMA devices (and ports) NCCL/RCCL use: the list syntax of
NCCL_SOCKET_IFNAME (prefixes, `^` exclude, `=` exact) plus an optional `:port` per entry
(`=mlx5_0:1,mlx5_1:1`). Naming devices that do not exist here leaves NCCL without IB devices,
so it falls back to TCP sockets (10x slower) or fails; naming DOWN ports breaks connections.
""")
def check_ib_hca(facts: Facts) -> Iterable[Verdict]:
    value = facts.env.get("NCCL_IB_HCA")
    if value is None:
        return
    if not facts.rdma:
        yield Verdict("warn", f"NCCL_IB_HCA={value} is set but this node has no RDMA device",
                      "NCCL/RCCL will use TCP sockets between nodes.",
                      "unset NCCL_IB_HCA on nodes without RDMA, or fix the RDMA driver "
                      "(`ibv_devinfo`)")
        return
    parsed = envlint.parse_name_list(value, with_ports=True)
    bad = [e for e in parsed.entries if e.bad_port is not None]
    if bad:
        yield Verdict("fail", f"NCCL_IB_HCA={value}: unreadable port in "
                      f"{', '.join(f'{e.name}:{e.bad_port}' for e in bad)}",
                      "A port is a number, e.g. mlx5_0:1.", "")
    ports = [(d, p) for d in facts.rdma for p in d.ports] or \
        [(d, RdmaPort(port=1)) for d in facts.rdma]
    chosen = [(d, p) for d, p in ports if parsed.selects(d.name, p.port)]
    have = ", ".join(f"{d.name}:{p.port}" for d, p in ports)
    if not chosen:
        what = "excludes every RDMA port" if parsed.exclude else "matches no RDMA device"
        yield Verdict("fail", f"NCCL_IB_HCA={value} {what} here",
                      f"RDMA ports on this node: {have}. NCCL/RCCL find no IB device and fall "
                      "back to TCP sockets (or fail).",
                      "export NCCL_IB_HCA=" + ",".join(sorted({d.name for d, p in ports
                                                               if p.active}) or ["<device>"]))
        return
    if not parsed.exclude:
        unmatched = parsed.unmatched([d.name for d in facts.rdma])
        wrong_port = [e for e in parsed.entries if e.port is not None and e.bad_port is None
                      and any(parsed.matches(e, d.name) for d in facts.rdma)
                      and not any(parsed.matches(e, d.name, p.port) for d, p in ports)]
        if unmatched or wrong_port:
            names = [e.name for e in unmatched] + [f"{e.name}:{e.port}" for e in wrong_port]
            yield Verdict("warn", f"NCCL_IB_HCA names {', '.join(names)}, absent here",
                          f"RDMA ports on this node: {have}.",
                          "remove the absent entries (or fix the device that is missing)")
    inactive = [f"{d.name}:{p.port}" for d, p in chosen if p.state and not p.active]
    if inactive and len(inactive) == len(chosen):
        yield Verdict("fail", "NCCL_IB_HCA selects only ports that are not active",
                      f"Selected: {', '.join(inactive)}.",
                      "bring the links up or select active ports")
    elif inactive:
        yield Verdict("warn", f"NCCL_IB_HCA selects inactive port(s): {', '.join(inactive)}",
                      "Connections through them fail.", "exclude them, e.g. NCCL_IB_HCA=^=" +
                      ",".join(sorted({i.split(':')[0] for i in inactive})))
    else:
        yield Verdict("ok", f"NCCL_IB_HCA={value} selects "
                      f"{', '.join(f'{d.name}:{p.port}' for d, p in chosen)}")


@rule("env.debug-knobs", "env", """
NCCL's documentation separates system-configuration variables from debugging ones that
"should not be used in production nor retained in scripts", among them the algorithm,
protocol, channel and buffer overrides. Flagged: NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS,
NCCL_MAX_NCHANNELS, NCCL_BUFFSIZE, NCCL_NTHREADS, NCCL_CHECKS_DISABLE, NCCL_LAUNCH_MODE, and
the switches that turn a transport off (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_IB_DISABLE).
Left set, they pin choices NCCL/RCCL would tune per size and topology (RCCL bypasses its MI300
channel tuning model when NCCL_MIN/MAX_NCHANNELS are set) and typically cost bandwidth or
cause hangs.
""")
def check_debug_knobs(facts: Facts) -> Iterable[Verdict]:
    for name, why in envlint.DEBUG_KNOBS.items():
        if name in facts.env:
            yield Verdict("warn", f"{name}={facts.env[name]} is set (a debugging knob)",
                          f"It {why}. Keep it for an experiment, not in a job script.",
                          f"unset {name}")


@rule("env.nccl-debug", "env", """
NCCL_DEBUG=INFO (or TRACE) makes every rank print its topology, channels and connections:
exactly what a diagnosis needs, and megabytes of log per job otherwise, written while
communicators initialise. Leave it unset (or WARN) in production and turn it on to debug.
""")
def check_nccl_debug(facts: Facts) -> Iterable[Verdict]:
    value = facts.env.get("NCCL_DEBUG")
    if value is not None and value.strip().upper() in ("INFO", "TRACE"):
        yield Verdict("warn", f"NCCL_DEBUG={value} is left on",
                      "Every rank logs init details (TRACE: every call); this slows "
                      "initialisation and floods logs.",
                      "unset NCCL_DEBUG (or NCCL_DEBUG=WARN) outside debugging sessions")


@rule("env.obsolete", "env", """
Switches that the installed library no longer has do nothing, and whoever set them believes
they do. collscope keeps a small table with sources: RCCL removed its clique-based kernels in
2.12.10 (ROCm 5.3), so RCCL_ENABLE_CLIQUE, RCCL_CLIQUE_IGNORE_TOPO,
RCCL_CLIQUE_ALLREDUCE_BYTE_LIMIT and RCCL_CLIQUE_ALLREDUCE_NCHANNELS are dead;
RCCL_FORCE_ENABLE_CLIQUE was replaced in 2.8.4; RCCL_ENABLE_HIPGRAPH is unnecessary since
2.13.4 (ROCm 5.4). NCCL renamed NCCL_MAX/MIN_NRINGS to NCCL_MAX/MIN_NCHANNELS and
NCCL_IB_GDR_LEVEL to NCCL_NET_GDR_LEVEL; torch reads TORCH_NCCL_ASYNC_ERROR_HANDLING,
TORCH_NCCL_BLOCKING_WAIT and TORCH_NCCL_DESYNC_DEBUG instead of the NCCL_* spellings.
The installed RCCL version comes from torch (torch.cuda.nccl.version()) or the NCCL log.
""")
def check_obsolete(facts: Facts) -> Iterable[Verdict]:
    installed = envlint.version_tuple(facts.rccl_or_nccl_version)
    is_rccl = bool(facts.torch and facts.torch.hip) or \
        bool(facts.nccl_log and facts.nccl_log.library == "RCCL")
    for name in sorted(facts.env):
        entry = envlint.OBSOLETE.get(name)
        if entry is None:
            continue
        if entry.replacement:
            also = f" ({entry.replacement} is set too)" if entry.replacement in facts.env else ""
            yield Verdict("warn", f"{name} is an old name: use {entry.replacement}",
                          f"{entry.note}{also}.",
                          f"rename it: export {entry.replacement}={facts.env[name]}; "
                          f"unset {name}")
            continue
        removed = ".".join(map(str, entry.removed_in or ()))
        if installed is not None and is_rccl and entry.removed_in is not None:
            if installed >= entry.removed_in:
                yield Verdict("warn", f"{name} has no effect in the installed RCCL "
                              f"{'.'.join(map(str, installed))}", entry.note + ".",
                              f"unset {name}")
            continue
        yield Verdict("info", f"{name}: gone since RCCL {removed}",
                      f"{entry.note}; the installed RCCL version is unknown here.",
                      f"unset {name} if your RCCL is {removed} or newer")


@rule("env.typo", "env", """
NCCL, RCCL, torch and gloo silently ignore variables they do not know, so a misspelt name
(NCCL_SOCKET_IFNAMES, NCCL_IB_HCAS, RCCL_SOCKET_IFNAME for NCCL_SOCKET_IFNAME) leaves the
intended setting unset. Names with the NCCL_, RCCL_, TORCH_NCCL_ and GLOO_ prefixes are
compared with the names collscope knows (difflib similarity >= 0.85); close ones are flagged
with the probable intended name, other unknown ones are listed as information (a network
plugin's or a newer release's variable).
""")
def check_typos(facts: Facts) -> Iterable[Verdict]:
    unknown = []
    for name in sorted(facts.env):
        if not name.startswith(envlint.TYPO_PREFIXES) or name in envlint.KNOWN:
            continue
        close = envlint.closest_known(name)
        if close:
            yield Verdict("warn", f"{name} is not a known variable: did you mean {close}?",
                          f"{name}={facts.env[name]} is ignored by the libraries.",
                          f"rename it: export {close}={facts.env[name]}; unset {name}")
        else:
            unknown.append(name)
    if unknown:
        yield Verdict("info", f"Variables collscope does not know: {_listing(unknown)}",
                      "They may belong to a network plugin or a newer release.", "")


# --------------------------------------------------------------------------- self-test


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


# --------------------------------------------------------------------------- tools

@rule("tools.availability", "tools", """
doctor reads the vendor and system tools (amd-smi, rocm-smi, rocminfo, nvidia-smi, ucx_info,
ibv_devinfo, lspci), each from an argument list with a timeout. A missing tool means the
facts it would give are absent from the report (not wrong); a tool that had to be killed
after the timeout usually means a wedged driver or GPU; output that was only partly
understood is listed so that a bundle assembled by hand can be fixed.
""")
def check_tools(facts: Facts) -> Iterable[Verdict]:
    runs = facts.tools
    missing = [r for r in runs.values() if r.status == "missing"]
    if missing:
        names = sorted({r.argv[0] for r in missing if r.argv})
        vendor_runs = [r for f, r in runs.items() if _group(f) == facts.vendor]
        gpu_tools_missing = bool(vendor_runs) and all(r.status == "missing"
                                                      for r in vendor_runs)
        fix = ""
        if gpu_tools_missing:
            fix = ("install ROCm's amd-smi / rocm-smi / rocminfo (or add /opt/rocm/bin to PATH)"
                   if facts.vendor == "amd" else "install the NVIDIA driver utilities "
                   "(nvidia-smi)")
        yield Verdict("warn" if gpu_tools_missing else "info",
                      f"Not installed (or not on PATH): {', '.join(names)}",
                      "The facts these tools give are missing from this report." +
                      (" This node has GPUs but none of their tools." if gpu_tools_missing
                       else ""), fix)
    for run in runs.values():
        command = " ".join(run.argv)
        if run.status == "timeout":
            yield Verdict("warn", f"`{command}` did not answer and was killed",
                          f"{run.stderr}. A hung vendor tool usually means a wedged driver or "
                          "GPU.", "check `dmesg` for GPU/driver errors; reboot or reset the GPU")
        elif run.status == "error":
            first = (run.stderr.splitlines() or ["no message"])[0][:200]
            yield Verdict("info", f"`{command}` failed (exit {run.returncode})", first, "")
    for name, warnings in sorted(facts.notes.items()):
        yield Verdict("info", f"{name}: {len(warnings)} line(s) not understood",
                      "; ".join(w[:120] for w in warnings[:3]), "")


def _group(file: str) -> str | None:
    return next((t.group for t in TOOLS if t.file == file), None)


register_external("cluster.differences", "cluster", """
Under --all-ranks (torchrun, srun, mpirun, or --nproc locally) every node's local rank 0
collects its facts and all ranks exchange them (all_gather_object); rank 0 shows what differs
between nodes: GPU driver, ROCm, RCCL/NCCL and torch versions, GPU count and model, the
NCCL_/RCCL_/HSA_/UCX_/GLOO_ environment, kernel settings, NIC and RDMA port states. Different
library versions or environments across nodes are the usual cause of multi-node hangs and of
one slow node holding back the whole job; per-rank device variables (HIP/CUDA_VISIBLE_DEVICES)
are excluded.
""")

# Rules kept in their own modules register on import.
from collscope.doctor import vendor_output  # noqa: E402,F401
