"""Network: interfaces, RDMA ports, RoCE GIDs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from collscope.doctor.facts import Facts, RdmaDevice, RdmaPort
from collscope.doctor.rules.common import listing
from collscope.doctor.rules.registry import Verdict, rule


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
collectives go over TCP sockets (NET/Socket), typically 10x slower. A bundle without any of
those sources says nothing about RDMA ("not captured"); the NICs an NCCL/RCCL log names under
NET/IB are cited then.
""")
def check_rdma_ports(facts: Facts) -> Iterable[Verdict]:
    if not facts.rdma:
        log_nics = sorted({f"{n.name}:{n.port}" if n.port is not None else n.name
                           for n in (facts.nccl_log.nics if facts.nccl_log else [])
                           if n.net == "IB"})
        from_log = (f" The {facts.nccl_log.library or 'NCCL'} log names IB NIC(s): "
                    f"{listing(log_nics)}." if log_nics and facts.nccl_log else "")
        if not facts.rdma_captured:
            yield Verdict("info", "RDMA devices not captured",
                          "The bundle holds neither /sys/class/infiniband nor ibv_devinfo -v / "
                          "ibstat output, so the RDMA ports were not checked." + from_log,
                          "add `ibv_devinfo -v` (ibv_devinfo-v.txt) or `ibstat` (ibstat.txt) "
                          "output to the bundle, or collect it with `collscope doctor "
                          "--collect`")
        else:
            yield Verdict("info", "No RDMA device (InfiniBand/RoCE)",
                          "Inter-node NCCL/RCCL traffic would use TCP sockets." + from_log, "")
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
                      f"{listing(names)}. If a job selects them, it fails or falls back to "
                      "sockets.",
                      "fix the link, or keep NCCL away from it: NCCL_IB_HCA=^=" +
                      ",".join(sorted({d.name for d, _ in down})))
    rates = {p.rate for _, p in active if p.rate}
    if len(rates) > 1:
        yield Verdict("warn", "Active RDMA ports run at different rates",
                      f"Rates: {listing(sorted(rates))}. Rings through the slowest port set "
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
            gids = listing([f"{g.index} {g.type or '?'}" for g in port.gids]) or "none"
            yield Verdict("warn" if port.active else "info", f"{where}: no RoCE v2 GID",
                          f"GIDs: {gids}. RoCE v2 needs an IP address on the port's netdev.",
                          "assign an IP address to the port's network interface")
            continue
        best = next((g for g in v2 if g.ipv4), v2[0])
        yield Verdict("info", f"{where}: RoCE v2 GID index {best.index}",
                      "RoCE v2 GIDs: " + listing([f"{g.index} {g.gid}" +
                                                   (f" ({g.ndev})" if g.ndev else "")
                                                   for g in v2]) + ".")
        if wanted is not None:
            chosen = next((g for g in port.gids if str(g.index) == wanted.strip()), None)
            if chosen is None or "v2" not in (chosen.type or "").lower():
                yield Verdict("warn", f"{where}: NCCL_IB_GID_INDEX={wanted} is not a RoCE v2 GID",
                              f"Entry {wanted} is {'missing' if chosen is None else chosen.type}.",
                              f"export NCCL_IB_GID_INDEX={best.index}")
