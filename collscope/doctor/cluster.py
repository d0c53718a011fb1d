"""`collscope doctor --all-ranks`: every node's facts to rank 0, and what differs between nodes.

Under torchrun / srun / mpirun (or ``--nproc`` locally) each rank joins the job's process
group; local rank 0 of each node captures and checks its node, every rank contributes its
environment, and all ranks exchange that with ``all_gather_object``. Then one verified
all_reduce across all ranks (collscope.bench) is the cluster's self-test. Rank 0 prints the
differences between nodes (the usual cause of multi-node hangs) and every node's findings.

The comparison itself (``node_summary``, ``differences``, ``merge_findings``) is pure.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

from collscope.doctor.checks import VISIBLE_DEVICES, Finding, exit_code, run_checks, sort_findings
from collscope.doctor.facts import Facts
from collscope.doctor.rules.registry import Level

# Interfaces that legitimately differ between nodes (containers, bridges, tunnels).
VIRTUAL_IFACES = ("lo", "docker", "veth", "virbr", "br-", "cni", "flannel", "cali", "vxlan",
                  "tun", "tap", "tailscale", "weave", "kube")
# Keys whose difference is a hang waiting to happen, not just a slow node.
FAIL_KEYS = ("GPU driver", "ROCm", "RCCL/NCCL", "torch", "UCX")


@dataclass
class NodeReport:
    """What one node contributes: its findings, comparable facts and inventory."""

    node: int
    host: str
    ranks: list[int] = field(default_factory=list)
    summary: dict[str, str] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    inventory: dict[str, Any] = field(default_factory=dict)


def node_summary(facts: Facts) -> dict[str, str]:
    """The facts that must agree across nodes, as comparable strings."""
    torch = facts.torch
    summary = {
        "GPU driver": facts.driver_version or "unknown",
        "ROCm": facts.host.rocm_version or "none",
        "RCCL/NCCL": facts.rccl_or_nccl_version or "unknown",
        "torch": (torch.version if torch and torch.version else "unknown"),
        "GPU count": str(len(facts.gpus) or (torch.gpu_count if torch else 0)),
        "GPU model": facts.gpu_platform or "none",
        "kernel": facts.host.kernel or "unknown",
        "numa_balancing": "unknown" if facts.host.numa_balancing is None
        else str(facts.host.numa_balancing),
        "UCX": (facts.ucx_version.version or "unknown") if facts.ucx_version else "none",
        "memlock": "unknown" if facts.host.memlock_soft is None else
        "unlimited" if facts.host.memlock_soft == -1 else str(facts.host.memlock_soft),
    }
    for iface in facts.interfaces:
        if iface.name.startswith(VIRTUAL_IFACES):
            continue
        speed = f" {iface.speed_mbps} Mb/s" if iface.speed_mbps else ""
        summary[f"nic {iface.name}"] = f"{iface.operstate or '?'}{speed}"
    for dev in facts.rdma:
        for port in dev.ports:
            summary[f"rdma {dev.name}:{port.port}"] = \
                f"{port.state or '?'} {port.rate or ''}".strip()
    return summary


def rank_env(env: dict[str, str]) -> dict[str, str]:
    """Environment worth comparing between ranks (per-rank device lists excluded)."""
    return {k: v for k, v in env.items() if k not in VISIBLE_DEVICES}


def differences(nodes: list[NodeReport], envs: dict[int, dict[str, str]],
                rank_nodes: dict[int, int]) -> list[Finding]:
    """One finding per fact that differs between nodes, and per variable between ranks."""
    found: list[Finding] = []
    keys = sorted({k for n in nodes for k in n.summary})
    for key in keys:
        values = {n.node: n.summary.get(key, "absent") for n in nodes}
        if len(set(values.values())) > 1:
            level: Level = "fail" if key in FAIL_KEYS else "warn"
            detail = "; ".join(f"node {n.node} ({n.host}): {values[n.node]}" for n in nodes)
            found.append(Finding("cluster.differences", level, "cluster",
                                 f"{key} differs between nodes", detail,
                                 "make every node identical (same image, driver and "
                                 "settings) or exclude the odd node"))
    names = sorted({k for env in envs.values() for k in env})
    for name in names:
        per_rank: dict[int, str | None] = {rank: env.get(name) for rank, env in envs.items()}
        if len(set(per_rank.values())) > 1:
            detail = "; ".join(
                f"rank {rank} (node {rank_nodes.get(rank, '?')}): "
                f"{'<unset>' if value is None else value}"
                for rank, value in sorted(per_rank.items()))
            found.append(Finding("cluster.differences", "warn", "cluster",
                                 f"{name} differs between ranks", detail,
                                 f"set {name} the same way for every rank (launcher script, "
                                 "`srun --export`, `mpirun -x`)"))
    if not found:
        found.append(Finding("cluster.differences", "ok", "cluster",
                             f"{len(nodes)} node(s), {len(envs)} rank(s) agree",
                             "Same driver, ROCm, RCCL/NCCL, torch, GPU count and model, kernel "
                             "settings, NIC and RDMA port states, and environment."))
    return found


def merge_findings(nodes: list[NodeReport]) -> list[Finding]:
    """Every node's findings once, tagged with the nodes they apply to when not all."""
    order: list[tuple[str, Level, str, str, str, str]] = []
    where: dict[tuple[str, Level, str, str, str, str], list[int]] = {}
    for node in nodes:
        for f in node.findings:
            key = (f["id"], f["level"], f["area"], f["title"], f["detail"], f["fix"])
            if key not in where:
                order.append(key)
                where[key] = []
            where[key].append(node.node)
    merged = []
    for key in order:
        rule_id, level, area, title, detail, fix = key
        if len(nodes) > 1 and len(where[key]) < len(nodes):
            title = f"{title} [node {','.join(map(str, where[key]))}]"
        merged.append(Finding(rule_id, level, area, title, detail, fix))
    return merged


def run_cluster(config: Any, argv: list[str]) -> int:
    """Join (or spawn) the job and run doctor on every node; rank 0 reports."""
    from collscope.runtime.entry import Job, launch_or_spawn

    def validate(_world: int, _backend: str) -> None:
        return None

    def body(session: Any, launcher: str) -> int:
        return _rank(config, session, launcher)

    def check_collect() -> None:
        if config.collect:
            check_bundle_target(config.collect)

    # Local rank 0 of each node writes its node's bundle: it alone checks --collect.
    return launch_or_spawn(Job("doctor", config.backend, config.timeout_s, config.nproc,
                               validate, body, node_output_check=check_collect),
                           argv)


def bundle_name(pattern: str, node: int, nodes: int) -> str:
    """Where a node's --collect bundle goes: {node} and {host} filled in, else (several
    nodes) ``.node<N>`` before the first dot of the pattern."""
    name = pattern.replace("{node}", str(node)).replace("{host}", socket.gethostname())
    if name == pattern and nodes > 1:
        stem, dot, rest = pattern.partition(".")
        name = f"{stem}.node{node}{dot}{rest}"
    return name


def check_bundle_target(pattern: str) -> None:
    """--collect's folder on this node, before any probing (the node index is known only after
    the exchange; it changes the file name, not its folder, unless {node} names a folder)."""
    from collscope.doctor.bundle import check_target

    name = bundle_name(pattern, 0, 1)
    if "{node}" not in os.path.dirname(pattern):
        check_target(name)


def _rank(config: Any, session: Any, launcher: str) -> int:
    """One rank's part: capture (local rank 0), exchange, self-test, report (rank 0)."""
    import torch.distributed as dist

    mine, capture = _local_part(config, session)
    everyone: list[Any] = [None] * session.world_size
    with session.watchdog.step("exchange of node facts (all_gather_object)"):
        dist.all_gather_object(everyone, mine)
    keys = list(dict.fromkeys(e["node_key"] for e in everyone))
    nodes = sorted((NodeReport(keys.index(e["node_key"]), e["host"],
                               [o["rank"] for o in everyone if o["node_key"] == e["node_key"]],
                               **e["node"]) for e in everyone if e.get("node")),
                   key=lambda n: n.node)
    if capture is not None and config.collect:
        _write_node_bundle(config.collect, capture, keys.index(mine["node_key"]), len(keys))
    rank_nodes = {e["rank"]: keys.index(e["node_key"]) for e in everyone}
    envs = {e["rank"]: e["env"] for e in everyone}
    findings = merge_findings(nodes) + differences(nodes, envs, rank_nodes)
    if config.selftest:
        findings += run_checks(Facts(selftest=_cluster_selftest(config, session)),
                               only=["selftest.allreduce"])
    findings = sort_findings(findings)
    if session.rank == 0:
        _print(config, findings, nodes, launcher, session.world_size)
    return exit_code(findings)


def _local_part(config: Any, session: Any) -> tuple[dict[str, Any], dict[str, str] | None]:
    """What this rank contributes (its environment; on local rank 0 also its node's
    summary, findings and inventory), and the node's capture (kept here, not exchanged)."""
    from collscope.doctor import collect_local, diagnose, json_report
    from collscope.doctor.facts import parse_env
    from collscope.doctor.probes import capture_env

    launch = session.launch
    node_key = launch.node_rank if launch.node_rank is not None else socket.gethostname()
    mine: dict[str, Any] = {"rank": session.rank, "node_key": node_key,
                            "host": socket.gethostname(),
                            "env": rank_env(parse_env(capture_env()))}
    if launch.local_rank != 0:
        return mine, None
    with session.watchdog.step("node capture (doctor probes)"):
        capture = collect_local(config, with_selftest=False,
                                skip_reason="Replaced by the all-ranks self-test (--all-ranks).")
    facts, findings = diagnose(capture)
    mine["node"] = {"summary": node_summary(facts),
                    "findings": [f.to_dict() for f in findings if f.id != "selftest.allreduce"],
                    "inventory": json_report([], facts)["inventory"]}
    return mine, capture


def _cluster_selftest(config: Any, session: Any) -> Any:
    from collscope.bench import BenchConfig
    from collscope.doctor.selftest import (
        ITERS,
        SIZE_BYTES,
        WARMUP_ITERS,
        SelfTestResult,
        bench_result,
    )

    bench_config = BenchConfig(collectives=["all_reduce"], min_bytes=SIZE_BYTES,
                               max_bytes=SIZE_BYTES, iters=ITERS, warmup_iters=WARMUP_ITERS,
                               backend=session.backend, timeout_s=config.timeout_s)
    try:
        result = bench_result(bench_config, session)
    except Exception as error:  # a RankFailure on a peer's death is reported, then re-raised
        result = SelfTestResult("fail", backend=session.label, world_size=session.world_size,
                                error=str(error).splitlines()[0])
    result.method = (f"collscope.bench all_reduce across all {session.world_size} ranks "
                     f"({session.label}), float sum of {SIZE_BYTES} B, {ITERS} timed "
                     "iterations; time = mean per op, mean over ranks; verified afterwards")
    return result


def _write_node_bundle(pattern: str, capture: dict[str, str] | None, node: int,
                       nodes: int) -> None:
    from collscope.doctor.bundle import write_bundle

    if capture is None:
        return
    name = bundle_name(pattern, node, nodes)
    write_bundle(capture, name)
    sys.stderr.write(f"collscope doctor: node {node}: bundle written to {name}\n")


def _print(config: Any, findings: list[Finding], nodes: list[NodeReport], launcher: str,
           world: int) -> None:
    from collscope.doctor import report

    if config.json_document:
        from collscope.config_flags import say_deprecated

        say_deprecated("--json without FILE", "--json FILE (JSON Lines; - for stdout)")
        payload = {"findings": [f.to_dict() for f in findings],
                   "inventory": nodes[0].inventory if nodes else {},
                   "nodes": [{"node": n.node, "host": n.host, "ranks": n.ranks,
                              "summary": n.summary, "inventory": n.inventory} for n in nodes]}
        sys.stdout.write(json.dumps(payload, indent=1, default=str) + "\n")
        sys.stdout.flush()
        return
    if config.json:
        from collscope.doctor.json_lines import write_doctor_records
        from collscope.records.doctor import DoctorNodeRecord

        write_doctor_records(config.json, findings,
                             [DoctorNodeRecord(node=n.node, host=n.host, ranks=n.ranks,
                                               summary=n.summary, inventory=n.inventory)
                              for n in nodes], launcher=launcher, world_size=world)
        if config.json == "-":
            return
    hosts = ", ".join(f"node {n.node} {n.host} (ranks {','.join(map(str, n.ranks))})"
                      for n in nodes)
    header = (f"collscope doctor --all-ranks: {len(nodes)} node(s), {world} rank(s) via "
              f"{launcher}: {hosts}")
    report.render(findings, header, sys.stdout)
