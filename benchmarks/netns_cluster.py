"""An emulated two-node cluster on one Linux machine, for benchmarks.

Two network namespaces joined by a veth pair play two nodes: ranks inside one namespace talk
over its loopback (fast, "intra-node"), ranks in different namespaces over the veth pair, whose
bandwidth `tc tbf` caps (the slow "inter-node" network). One torchrun agent per namespace
(`--nnodes 2 --node-rank i`) makes it a real multi-node launch; GLOO_SOCKET_IFNAME pins gloo to
the namespace's veth address. Needs root (or CAP_NET_ADMIN); callers skip when it is refused.
Addresses come from 198.18.0.0/30 (reserved for benchmarking) and never leave the namespaces.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

NAMESPACES = ("collscope-n0", "collscope-n1")
ADDRESSES = ("198.18.0.1", "198.18.0.2")
INTERFACES = ("csveth0", "csveth1")


class ClusterUnavailable(RuntimeError):
    """Network namespaces are not permitted here."""


def _ip(*args: str, netns: str | None = None) -> None:
    command = ["ip", *args] if netns is None else ["ip", "netns", "exec", netns, "ip", *args]
    subprocess.run(command, check=True, capture_output=True, timeout=30)


@dataclass(frozen=True)
class Cluster:
    rate: str  # tc rate of the inter-node link, e.g. "1gbit"

    def command(self, node: int, argv: Sequence[str], env: dict[str, str]) -> list[str]:
        """argv run inside node ``node``'s namespace with gloo pinned to its veth."""
        pinned = {**env, "GLOO_SOCKET_IFNAME": INTERFACES[node]}
        return ["ip", "netns", "exec", NAMESPACES[node], "env",
                *[f"{k}={v}" for k, v in pinned.items()], *argv]

    def torchrun(self, ranks_per_node: int, port: int, module_args: Sequence[str],
                 timeout: float = 600) -> list[subprocess.CompletedProcess[str]]:
        """Run ``python -m MODULE_ARGS`` as a 2-node torchrun job; both agents' results."""
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")}
        agents = []
        for node in range(2):
            argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
                    "--node-rank", str(node), "--nproc-per-node", str(ranks_per_node),
                    "--master-addr", ADDRESSES[0], "--master-port", str(port),
                    "-m", *module_args]
            agents.append(subprocess.Popen(self.command(node, argv, env), text=True,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        results = []
        try:
            for agent in agents:
                out, err = agent.communicate(timeout=timeout)
                results.append(subprocess.CompletedProcess(agent.args, agent.returncode,
                                                           out, err))
        finally:
            for agent in agents:
                agent.kill()
        return results


@contextlib.contextmanager
def two_node_cluster(rate: str = "1gbit") -> Iterator[Cluster]:
    """Create the namespaces and the capped link; always remove them afterwards."""
    _cleanup()
    try:
        for namespace in NAMESPACES:
            _ip("netns", "add", namespace)
    except (subprocess.CalledProcessError, FileNotFoundError, PermissionError) as error:
        _cleanup()
        raise ClusterUnavailable(f"network namespaces are not permitted here: {error}") \
            from error
    try:
        _ip("link", "add", INTERFACES[0], "type", "veth", "peer", "name", INTERFACES[1])
        for node in range(2):
            namespace, interface = NAMESPACES[node], INTERFACES[node]
            _ip("link", "set", interface, "netns", namespace)
            _ip("addr", "add", f"{ADDRESSES[node]}/30", "dev", interface, netns=namespace)
            _ip("link", "set", interface, "up", netns=namespace)
            _ip("link", "set", "lo", "up", netns=namespace)
            subprocess.run(["ip", "netns", "exec", namespace, "tc", "qdisc", "add", "dev",
                            interface, "root", "tbf", "rate", rate, "burst", "256kb",
                            "latency", "50ms"], check=True, capture_output=True, timeout=30)
        yield Cluster(rate)
    finally:
        _cleanup()


def _cleanup() -> None:
    for namespace in NAMESPACES:
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30)
