"""Host kernel settings: NUMA balancing, IOMMU, PCIe ACS, locked-memory limit."""

from __future__ import annotations

from collections.abc import Iterable

from collscope.doctor.facts import Facts
from collscope.doctor.rules.common import gpu_count, human_bytes, listing
from collscope.doctor.rules.registry import Level, Verdict, rule


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
    level: Level = "warn" if facts.vendor == "amd" else "info"
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
        level: Level = "warn" if gpu_count(facts) >= 1 else "info"
        first = redirecting[0].address
        yield Verdict(level, f"ACS redirect enabled on {len(redirecting)} PCIe bridge(s)",
                      f"Bridges {listing([b.address for b in redirecting])} redirect P2P "
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
