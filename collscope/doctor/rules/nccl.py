"""RCCL/NCCL's own debug log (NCCL_DEBUG=INFO)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from collscope.doctor.facts import Facts
from collscope.doctor.rules.registry import Verdict, rule
from collscope.parsers import nccl_debug


@rule("nccl.log", "nccl", """
An NCCL_DEBUG=INFO log (nccl-debug.log in a bundle, or the one the GPU self-test writes) says
what RCCL/NCCL actually chose: its version, the network (IB, or the slow Socket fallback),
the NICs, channels and transports. Flagged: more than one library version among the ranks
(a classic cause of hangs) and WARN lines; the fall-back to TCP sockets and GPUDirect RDMA on
only some NICs are checks of their own (nccl.socket-fallback, nccl.partial-gdr).
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
    if log.log_warnings:
        yield Verdict("warn", f"{len(log.log_warnings)} WARN line(s) in the {lib} log",
                      "; ".join(w[:160] for w in log.log_warnings[:3]), "")


_VERBS_MISSING = re.compile(r"libibverbs|ibv_\w+ failed|NET/IB\s*:\s*No device", re.I)
SOCKET_FIX = ("install the RDMA user-space libraries on the node and in the container "
              "(rdma-core + ibverbs-providers, the Debian/Ubuntu package libibverbs1; "
              "rdma-core + libibverbs on RHEL), check that /dev/infiniband exists and lists "
              "uverbs* devices (`ls /dev/infiniband`), and give containers the devices: docker "
              "--device=/dev/infiniband --cap-add=IPC_LOCK --ulimit memlock=-1 (or --privileged), "
              "Kubernetes an RDMA device plugin resource; then NCCL_IB_HCA to the active ports")


def _hosts_using(log: nccl_debug.NcclDebugSummary, network: str) -> list[str]:
    """The hosts some rank of which logged "Using network <network>", in log order."""
    return list(dict.fromkeys(r.host for r in log.ranks if r.network == network))


@rule("nccl.socket-fallback", "nccl", """
RCCL/NCCL carry inter-node traffic over RDMA (NET/IB: InfiniBand or RoCE) when the verbs
library (libibverbs, from rdma-core) loads and an RDMA device is visible; otherwise they fall
back to TCP sockets ("Using network Socket"), 10-50x slower, without failing. The log shows
why: "Failed to open libibverbs.so" (the library is missing, often inside a container image),
"NET/IB : No device found" (no /dev/infiniband in the container, the RDMA driver not loaded,
NCCL_IB_HCA matching nothing, or NCCL_IB_DISABLE=1). The network is judged per host: one
node on Socket while the others use IB holds the whole job back, so the hosts that fell back
are named. On one node the network only carries what P2P/SHM cannot, so it is a warning; in a
multi-node job every byte to or from those hosts goes over TCP, so it fails.
""")
def check_socket_fallback(facts: Facts) -> Iterable[Verdict]:
    log = facts.nccl_log
    if log is None or "Socket" not in log.network_counts:
        return
    socket_hosts = _hosts_using(log, "Socket")
    lib = log.library or "NCCL"
    causes = list(log.ib_failures)
    causes += [w for w in log.log_warnings + log.plugin_messages if _VERBS_MISSING.search(w)]
    if log.ib_no_device:
        causes.append("NET/IB : No device found")
    if facts.env.get("NCCL_IB_DISABLE") == "1":
        causes.append("NCCL_IB_DISABLE=1 in the environment")
    multi_node = len(log.hosts) > 1
    partial = multi_node and bool(socket_hosts) and len(socket_hosts) < len(log.hosts)
    if partial:
        others = [h for h in log.hosts if h not in socket_hosts]
        where = (f"{len(socket_hosts)} of {len(log.hosts)} nodes: {', '.join(socket_hosts)}")
        effect = (f" The other nodes ({', '.join(others[:4])}) use "
                  f"{'/'.join(n for n in log.network_counts if n != 'Socket') or 'RDMA'}, but "
                  "every transfer to or from the hosts named goes over TCP and holds back "
                  "the whole job.")
    elif multi_node:
        where = f"a {len(log.hosts)}-node job ({', '.join(log.hosts[:4])})"
        effect = " Every inter-node transfer of this job goes over TCP."
    else:
        where = "one node"
        effect = " Multi-node jobs from this node would run over TCP."
    why = "; ".join(dict.fromkeys(c[:160] for c in causes)) or "no reason logged"
    yield Verdict("fail" if multi_node else "warn",
                  f"{lib} fell back to TCP sockets (Using network Socket) on {where}",
                  f"Why, from the log: {why}." + effect, SOCKET_FIX)


_NET_VIA = re.compile(r"^NET/(?P<net>[^/]+)/(?P<nic>\d+)(?P<gdr>/GDRDMA)?", re.I)


@rule("nccl.partial-gdr", "nccl", """
With GPUDirect RDMA the NIC reads and writes GPU memory directly ("via NET/IB/0/GDRDMA" in
the channel lines); without it every inter-node transfer is staged through host memory
("via NET/IB/1"), costing bandwidth and CPU. When some NICs use it and others do not, the
ranks behind the slow NICs hold back every collective. Usual causes: the peer-memory module
(nvidia-peermem; on ROCm the amdgpu peer-memory support) or dma-buf (kernel 5.12+, rdma-core
34+, NCCL_DMABUF_ENABLE) available for some devices only, NCCL_NET_GDR_LEVEL below the
PCIe distance of some GPU-NIC pairs, or NICs placed under another CPU socket than their GPUs.
""")
def check_partial_gdr(facts: Facts) -> Iterable[Verdict]:
    log = facts.nccl_log
    if log is None:
        return
    with_gdr: set[int] = set()
    without: set[int] = set()
    net = "IB"
    for via in log.transport_counts:
        match = _NET_VIA.match(via)
        if match:
            net = match.group("net")
            (with_gdr if match.group("gdr") else without).add(int(match.group("nic")))
    names = {n.index: n.name for n in log.nics if n.net == net}   # not NET/Socket's eth0
    disabled = sorted(h for h, on in log.gdr_hca.items() if not on)
    enabled = [h for h, on in log.gdr_hca.items() if on]
    slow = sorted(without - with_gdr)
    if not ((with_gdr and slow) or (enabled and disabled)):
        return
    listed = [f"NET/{net}/{i}" + (f" ({names[i]})" if i in names else "") for i in slow]
    named = {names[i] for i in slow if i in names}
    listed += [f"{h} (GPU Direct RDMA disabled)" for h in disabled if h not in named]
    if with_gdr:
        fast = ", ".join(f"NET/{net}/{i}/GDRDMA" for i in sorted(with_gdr))
        staged = ", ".join(f"NET/{net}/{i}" for i in slow) or "the others"
        detail = f"Channels via {fast} use it; channels via {staged} stage through host memory."
    else:
        detail = (f"The library logged GPU Direct RDMA enabled for {', '.join(sorted(enabled))} "
                  f"and disabled for {', '.join(disabled)}; transfers through the disabled HCAs "
                  "stage through host memory.")
    yield Verdict("warn", f"GPUDirect RDMA on only some NICs: not on {', '.join(listed)}",
                  detail,
                  "enable peer memory for those NICs' GPUs (load nvidia-peermem, or on ROCm "
                  "the amdgpu peer-memory / dma-buf path: kernel 5.12+, rdma-core 34+, "
                  "NCCL_DMABUF_ENABLE=1), raise NCCL_NET_GDR_LEVEL (e.g. PHB or SYS) if the "
                  "GPU-NIC pairs are farther apart than it allows, and check NIC-GPU placement "
                  "(nvidia-smi topo -m / amd-smi topology)")
