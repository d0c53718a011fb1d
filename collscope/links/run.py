"""The measurement: rounds of disjoint pairs, each pair exchanging one message both ways.

Timing method: per iteration each rank of a pair posts its send and its receive together
(``batch_isend_irecv``, a sendrecv in both directions) and times, with perf_counter, from the
post to the completion of its receive (GPU: plus a device synchronise), so each rank times the
direction that arrives at it. ``time_us`` is the median over ``-n`` iterations after ``-w``
warm-ups; ``gbs`` = size / time (nccl-tests' sendrecv algbw = busbw). Rounds are separated by
an all-gather of the round's measurements (a barrier, so pairs of different rounds never
overlap), and every round runs under the watchdog's --timeout.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from collscope.collectives.table import bandwidths
from collscope.hw.topology import capture_topology
from collscope.links import budget, confirm, expected, plan
from collscope.links.config import LinksConfig
from collscope.links.schedule import Pair
from collscope.links.verdicts import NodeInfo, Threshold, judge
from collscope.records.links import LinkRecord, NodeRecord
from collscope.runtime.dist import Session
from collscope.runtime.guard import guard
from collscope.testing import faults

# The variable that pins a rank to a NIC, in the order collscope reports it.
NIC_VARIABLES = ("GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES")


def rank_nic(environ: dict[str, str] | None = None) -> str | None:
    """The NIC named by the variable that pins this rank to one, if any."""
    environ = dict(os.environ) if environ is None else environ
    for name in NIC_VARIABLES:
        if environ.get(name):
            return f"{environ[name]} ({name})"
    return None


@dataclass
class Phase:
    scope: str                       # inter | intra
    rounds: list[list[Pair]]


@dataclass
class Outcome:
    links: list[LinkRecord]
    nodes: list[NodeRecord]
    thresholds: list[Threshold]
    phases: list[Phase]
    seconds: float
    round_seconds: list[float] = field(default_factory=list)
    confirmations: list[confirm.Confirmation] = field(default_factory=list)


def phases_for(config: LinksConfig, by_node: list[list[int]]) -> list[Phase]:
    phases = []
    if len(by_node) > 1:
        rounds = plan.node_rounds(len(by_node), config.partners, config.seed)
        phases.append(Phase("inter", plan.inter_node_rounds(by_node, rounds, config.per_gpu)))
    intra = plan.intra_node_rounds(by_node)
    if intra:
        phases.append(Phase("intra", intra))
    return phases


def _sendrecv(session: Session, partner: int, send: torch.Tensor, recv: torch.Tensor,
              delay: faults.Fault | None = None) -> float:
    """One exchange both ways; seconds from its post to this rank's receive completion."""
    faults.sleep_ms(delay)
    start = time.perf_counter()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, send, partner),
                                    dist.P2POp(dist.irecv, recv, partner)])
    works[-1].wait()
    if session.device.type == "cuda":
        torch.cuda.synchronize(session.device)
    elapsed = time.perf_counter() - start
    for work in works[:-1]:
        work.wait()
    return elapsed


def _exchange(session: Session, partner: int, send: torch.Tensor, recv: torch.Tensor,
              config: LinksConfig, delay: faults.Fault | None, limit_s: float | None,
              ) -> dict[str, Any]:
    """One pair's exchanges in one round (links.budget): a probe, then warm-ups and timed
    exchanges while the budget allows, until ``-n`` or, when this rank's direction is under
    test (``limit_s``: its limit time), until both directions under test are decided. After
    each exchange the two ends swap (elapsed, pace, state) in a small sendrecv, so both take
    the same next step; its time is the pair's latency. This direction's times, latency and
    why it stopped."""
    size = send.numel() * 4
    probe = budget.probe_bytes(size) // 4
    control = torch.zeros(3, dtype=torch.float64, device=session.device)
    theirs = torch.zeros(3, dtype=torch.float64, device=session.device)
    started = time.perf_counter()
    pace = _sendrecv(session, partner, send[:probe], recv[:probe], delay) * size / (probe * 4)
    state = 0 if limit_s is None else 1        # 0 not under test, 1 undecided, 2 decided
    warmups = 0
    times: list[float] = []         # seconds per timed exchange
    latencies: list[float] = []
    while True:
        control.copy_(torch.tensor([time.perf_counter() - started, pace, state],
                                   dtype=torch.float64))
        latencies.append(_sendrecv(session, partner, control, theirs))
        other = theirs.tolist()
        settled = budget.settled([state, other[2]])
        step = budget.next_exchange(warmups, len(times), max(control[0].item(), other[0]),
                                    max(pace, other[1]), config.warmup_iters, config.iters,
                                    config.pair_budget_s, settled)
        if step is None:
            break
        pace = _sendrecv(session, partner, send, recv, delay)
        session.watchdog.beat()
        if step == "warmup":
            warmups += 1
            continue
        times.append(pace)
        if limit_s is not None and budget.decided(times, limit_s, config.iters):
            state = 2
    stop = "all" if len(times) == config.iters else "decided" if settled else "budget"
    return {"times": times, "size": size, "latency": min(latencies), "stop": stop}


@dataclass
class Rounds:
    """Runs scheduled rounds on every rank; each round's measurements reach every rank."""

    session: Session
    config: LinksConfig
    send: torch.Tensor
    recv: torch.Tensor
    on_round: Callable[[str, int, list[dict[str, Any]]], None] | None = None
    done: int = 0                                      # rounds run so far (the hang seam)
    seconds: list[float] = field(default_factory=list)

    def run(self, rounds: list[tuple[Phase, int]], attempt: int = 0,
            retry: confirm.Retry | None = None) -> list[dict[str, Any]]:
        """Run ``rounds``; ``attempt`` 0 is the first measurement, k the k-th confirmation,
        whose ``retry`` names the directions under test, their limits and their pairs' sizes
        (a pair without one: the first size)."""
        label = f"confirmation {attempt}/{self.config.confirm}: " if attempt else ""
        session = self.session
        # Test seams (None in real runs): a hung rank, a slow sender, a transient one.
        hang = faults.planted("hang", session.rank)
        delay = faults.planted("delay", session.rank) or (
            None if label else faults.planted("blip", session.rank))
        measured: list[dict[str, Any]] = []
        limits, sizes = (retry.limits, retry.sizes) if retry else ({}, {})
        for phase, index in rounds:
            pairs = phase.rounds[index]
            partner = plan.partner_of(pairs, session.rank)
            where = f"{label}{phase.scope}-node round {index + 1}/{len(phase.rounds)}"
            what = (f"links {where}" + (f" (rank {session.rank} <-> rank {partner})"
                                        if partner is not None else " (idle this round)"))
            round_started = time.monotonic()
            mine = []
            with guard(session, what):
                if hang is not None and self.done >= hang.arg:
                    faults.hang_forever()
                if partner is not None:
                    limit = limits.get((phase.scope, partner, session.rank))
                    size = sizes.get(confirm.pair_key(phase.scope, partner, session.rank),
                                     self.config.size_bytes)
                    count = size // 4
                    mine.append({"scope": phase.scope, "round": index, "src": partner,
                                 "dst": session.rank, **_exchange(
                                     session, partner, self.send[:count], self.recv[:count],
                                     self.config, delay,
                                     None if limit is None else size / (limit * 1e9))})
            everyone: list[Any] = [None] * session.world_size
            with guard(session, f"links {where}: all-gather of the round's timings "
                                "(waits for every rank)"):
                dist.all_gather_object(everyone, mine)
            self.seconds.append(time.monotonic() - round_started)
            self.done += 1
            done = [m for part in everyone for m in part]
            measured += done
            if self.on_round and session.rank == 0:
                self.on_round(where, attempt, done)
        return measured


def run(config: LinksConfig, session: Session,
        on_round: Callable[[str, int, list[dict[str, Any]]], None] | None = None,
        ) -> Outcome | None:
    """Measure every scheduled pair, then confirm the failing ones (see links.confirm); the
    judged outcome on rank 0, None on the others."""
    started = time.monotonic()
    devices = session.layout.devices
    by_node = plan.ranks_by_node(devices)
    phases = phases_for(config, by_node)
    me = devices[session.rank]
    matrix: list[list[str]] | None = None
    nearest: dict[int, str] = {}
    if session.device.type == "cuda" and me["local_rank"] == 0:
        with session.watchdog.step("links topology probe"):
            matrix, nearest = expected.node_topology(
                capture_topology(min(config.timeout_s, 20.0)))
    count = max(1, config.size_bytes // 4)
    rounds = Rounds(session, config,
                    torch.ones(count, dtype=torch.float32, device=session.device),
                    torch.empty(count, dtype=torch.float32, device=session.device), on_round)
    measured = rounds.run([(phase, i) for phase in phases for i in range(len(phase.rounds))])
    info: list[Any] = [None] * session.world_size
    with session.watchdog.step("links result exchange"):
        dist.all_gather_object(info, {"matrix": matrix, "nearest": nearest,
                                      "pinned": rank_nic()})
    resolve_nics(info, devices)
    nodes = [NodeInfo(node=n, host=devices[ranks[0]]["host"], ranks=ranks,
                      nics=sorted({info[r]["nic"] for r in ranks if info[r]["nic"]}))
             for n, ranks in enumerate(by_node)]
    judging = session.rank == 0          # rank 0 judges; the others run the rounds it names
    links: list[LinkRecord] = link_records(measured, devices, info) if judging else []
    node_records, thresholds = judge(links, nodes, config.fraction, config.expected_fraction)
    confirmations = []
    by_scope = {phase.scope: phase for phase in phases}
    for attempt in range(1, config.confirm + 1):
        failing = confirm.failing_directions(links)
        retry = _agreed(session, "confirmation plan", confirm.plan(
            links, measured, thresholds, config.expected_fraction, config.size_bytes)
            if judging else None)
        if not retry.rounds:
            break
        again, rounds_run = _confirmation(rounds, by_scope, retry, attempt)
        if not judging:
            continue
        confirm.merge_tries(measured, again, failing)
        links = link_records(measured, devices, info)
        node_records, _ = judge(links, nodes, config.fraction, config.expected_fraction,
                                fixed=thresholds)
        confirmations.append(confirm.Confirmation(
            attempt, rounds_run, len(failing), len(confirm.failing_directions(links)),
            sorted(set(retry.sizes.values()))))
    if not judging:
        return None
    return Outcome(links, node_records, thresholds, phases, time.monotonic() - started,
                   rounds.seconds, confirmations)


def _confirmation(rounds: Rounds, by_scope: dict[str, Phase], retry: confirm.Retry,
                  attempt: int) -> tuple[list[dict[str, Any]], int]:
    """One confirmation try on every rank: each round again, its pairs under test at their
    deciding sizes; the rounds where a direction under test passed below the first size once
    more at the first size (confirm.cleared_below_full_size), whose tries then replace those
    passes. The tries and the number of rounds run."""
    size_bytes = rounds.config.size_bytes
    again = rounds.run([(by_scope[scope], index) for scope, index in retry.rounds], attempt,
                       retry)
    small = _agreed(rounds.session, "full-size confirmation plan",
                    confirm.cleared_below_full_size(again, retry.limits, size_bytes)
                    if rounds.session.rank == 0 else None) \
        if min(retry.sizes.values()) < size_bytes else set()
    full = sorted({(m["scope"], m["round"]) for m in again if _key(m) in small})
    if full:
        again = [m for m in again if _key(m) not in small] + [
            m for m in rounds.run([(by_scope[scope], index) for scope, index in full], attempt,
                                  confirm.Retry(full, retry.limits, {})) if _key(m) in small]
    return again, len(retry.rounds) + len(full)


def _key(m: dict[str, Any]) -> tuple[str, int, int]:
    return m["scope"], m["src"], m["dst"]


def _agreed(session: Session, what: str, value: Any) -> Any:
    """Rank 0's ``value`` on every rank (rank 0 judges; the others run what it names)."""
    box = [value]
    with session.watchdog.step(f"links {what} broadcast"):
        dist.broadcast_object_list(box, src=0)
    return box[0]


def resolve_nics(info: list[dict[str, Any]], devices: list[dict[str, Any]]) -> None:
    """Each rank's NIC: the variable pinning it, else its GPU's nearest NIC from its node's
    topology probe (run by the node's local rank 0), else unknown."""
    nearest_by_node: dict[int, dict[int, str]] = {}
    for rank, entry in enumerate(info):
        if entry["nearest"]:
            nearest_by_node.setdefault(devices[rank]["node"], entry["nearest"])
    for rank, entry in enumerate(info):
        device = devices[rank]["device"]
        near = nearest_by_node.get(devices[rank]["node"], {}).get(device) \
            if isinstance(device, int) else None
        entry["nic"] = entry["pinned"] or (f"{near} (nearest to its GPU)" if near else None)


def link_records(measured: list[dict[str, Any]], devices: list[dict[str, Any]],
                 info: list[dict[str, Any]]) -> list[LinkRecord]:
    """Measurements -> link records (unjudged), with host, device, NIC and link type; each
    link's size, time and GB/s are its best try's."""
    matrices = {devices[r]["node"]: info[r]["matrix"] for r in range(len(devices))
                if info[r]["matrix"] is not None}
    records = []
    for m in measured:
        src, dst = devices[m["src"]], devices[m["dst"]]
        link_type, nominal = (None, None)
        if m["scope"] == "intra":
            link_type, nominal = expected.pair_link(matrices.get(src["node"]), src["device"],
                                                    dst["device"])
        time_us, gbs = median_gbs(m["size"], m["times"])
        tries = [median_gbs(t["size"], t["times"])[1] for t in m.get("tries", [m])]
        records.append(LinkRecord(
            src_host=src["host"], dst_host=dst["host"], src_rank=m["src"], dst_rank=m["dst"],
            src_device=_device(src), dst_device=_device(dst), src_nic=info[m["src"]]["nic"],
            dst_nic=info[m["dst"]]["nic"], scope=m["scope"], link_type=link_type,
            size_bytes=m["size"], iters=len(m["times"]), time_us=time_us, gbs=gbs,
            expected_gbs=nominal, round=m["round"], src_node=src["node"],
            dst_node=dst["node"], tries_gbs=tries))
    return records


def median_gbs(size_bytes: int, times_s: list[float]) -> tuple[float, float]:
    """(median time in us, GB/s) of one direction's timed iterations (sendrecv busbw)."""
    time_us = statistics.median(times_s) * 1e6
    return time_us, bandwidths(size_bytes, time_us, "sendrecv", 2)[0]


def _device(entry: dict[str, Any]) -> str:
    return entry["device_type"] if entry["device"] is None else \
        f"{entry['device_type']}:{entry['device']}"


def agree_exit(session: Session, code: int) -> int:
    """Rank 0's exit code on every rank, so every launcher agent reports the same gate."""
    return int(_agreed(session, "verdict", code))
