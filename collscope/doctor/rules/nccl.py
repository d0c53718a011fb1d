"""RCCL/NCCL's own debug log (NCCL_DEBUG=INFO)."""

from __future__ import annotations

from collections.abc import Iterable

from collscope.doctor.facts import Facts
from collscope.doctor.rules.registry import Verdict, rule


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
