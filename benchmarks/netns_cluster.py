"""An emulated multi-node cluster on one Linux machine, for benchmarks and slow tests.

Each "node" is a network namespace. Ranks inside one namespace talk over its loopback (fast,
"intra-node"); ranks in different namespaces talk over the node's veth pair into a hub
namespace that holds one Linux bridge per network (the "inter-node" fabric). A `tc tbf` on both
ends of a node's veth pair caps that node alone, so one slow node (a degraded NIC) or one slow
network of several (a second, slower interface per node) can be planted. One torchrun agent per
namespace (`--nnodes N --node-rank i`) makes it a real multi-node launch; GLOO_SOCKET_IFNAME pins
gloo to the chosen interface, and each agent gets its own host name (a UTS namespace), as real
nodes have. Needs root (or CAP_NET_ADMIN); callers skip when ClusterUnavailable is raised.

Addresses come from 198.18.0.0/15 (reserved for benchmarking) and never leave the namespaces.
Several emulations may run at once when they use different ``prefix`` and ``subnet`` values.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

# Sets the host name inside the agent's own UTS namespace, then becomes the agent (no shell).
_SET_HOSTNAME = ("import os, socket, sys; socket.sethostname(sys.argv[1]); "
                 "os.execvp(sys.argv[2], sys.argv[2:])")


class ClusterUnavailable(RuntimeError):
    """Network namespaces are not permitted here."""


def _run(command: Sequence[str]) -> None:
    subprocess.run(list(command), check=True, capture_output=True, timeout=30)


def _ip(*args: str, netns: str | None = None) -> None:
    _run(["ip", *args] if netns is None else ["ip", "netns", "exec", netns, "ip", *args])


@dataclass(frozen=True)
class Cluster:
    prefix: str
    nodes: int
    networks: int
    subnet: int
    rates: dict[tuple[int, int], str | None] = field(default_factory=dict)  # (node, network)

    def namespace(self, node: int) -> str:
        return f"{self.prefix}-n{node}"

    def interface(self, node: int, network: int = 0) -> str:
        """The node-side interface of ``network`` (what GLOO_SOCKET_IFNAME names)."""
        return f"{self.prefix}n{node}e{network}"

    def address(self, node: int, network: int = 0) -> str:
        return f"198.18.{self.subnet + network}.{node + 1}"

    def hostname(self, node: int) -> str:
        return f"{self.prefix}-node{node}"

    def command(self, node: int, argv: Sequence[str], env: dict[str, str],
                network: int | None = 0) -> list[str]:
        """argv run inside node ``node``'s namespace under its own host name, with gloo pinned
        to its interface on ``network`` (None: leave GLOO_SOCKET_IFNAME as ``env`` has it)."""
        pinned = dict(env)
        if network is not None:
            pinned["GLOO_SOCKET_IFNAME"] = self.interface(node, network)
        return ["ip", "netns", "exec", self.namespace(node), "unshare", "--uts", "env",
                *[f"{k}={v}" for k, v in pinned.items()],
                sys.executable, "-c", _SET_HOSTNAME, self.hostname(node), *argv]

    def torchrun(self, ranks_per_node: int, port: int, module_args: Sequence[str],
                 timeout: float = 600, env: dict[str, str] | None = None,
                 network: int | None = 0) -> list[subprocess.CompletedProcess[str]]:
        """Run ``python -m MODULE_ARGS`` as an N-node torchrun job; every agent's result."""
        base = env if env is not None else {
            k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")}
        agents = []
        for node in range(self.nodes):
            argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(self.nodes),
                    "--node-rank", str(node), "--nproc-per-node", str(ranks_per_node),
                    "--master-addr", self.address(0, network or 0), "--master-port",
                    str(port), "-m", *module_args]
            agents.append(subprocess.Popen(self.command(node, argv, base, network), text=True,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        results = []
        try:
            for agent in agents:
                out, err = agent.communicate(timeout=timeout)
                results.append(subprocess.CompletedProcess(agent.args, agent.returncode,
                                                           out, err))
        finally:
            stop_agents(agents)
        return results


def stop_agents(agents: Sequence[subprocess.Popen[str]], grace_s: float = 15) -> None:
    """End torchrun agents still running: SIGTERM first, which torchrun passes on to its
    workers (they run in sessions of their own, so killing the agent alone would leave them
    running, and loading the host, until their own timeout); SIGKILL after ``grace_s``."""
    running = [agent for agent in agents if agent.poll() is None]
    for agent in running:
        agent.terminate()
    for agent in running:
        try:
            agent.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()


def _cap(namespace: str, interface: str, rate: str) -> None:
    _run(["ip", "netns", "exec", namespace, "tc", "qdisc", "add", "dev", interface, "root",
          "tbf", "rate", rate, "burst", "256kb", "latency", "50ms"])


@contextlib.contextmanager
def netns_cluster(nodes: int = 2, rate: str | None = "1gbit", networks: int = 1,
                  link_rate: Callable[[int, int], str | None] | None = None,
                  prefix: str = "cs", subnet: int = 0) -> Iterator[Cluster]:
    """Create ``nodes`` namespaces on ``networks`` bridged networks; always remove them.

    ``link_rate(node, network)`` gives the tbf rate of that node's link on that network
    (None: uncapped); by default every link gets ``rate``. Network k uses 198.18.(subnet+k).0/24.
    """
    rate_of = link_rate or (lambda _node, _network: rate)
    cluster = Cluster(prefix, nodes, networks, subnet,
                      {(n, k): rate_of(n, k) for n in range(nodes) for k in range(networks)})
    hub = f"{prefix}-hub"
    namespaces = [hub, *(cluster.namespace(n) for n in range(nodes))]
    _cleanup(namespaces)
    try:
        for namespace in namespaces:
            _ip("netns", "add", namespace)
    except (subprocess.CalledProcessError, FileNotFoundError, PermissionError) as error:
        _cleanup(namespaces)
        raise ClusterUnavailable(f"network namespaces are not permitted here: {error}") \
            from error
    try:
        for namespace in namespaces:
            _ip("link", "set", "lo", "up", netns=namespace)
        for network in range(networks):
            bridge = f"{prefix}br{network}"
            _ip("link", "add", bridge, "type", "bridge", netns=hub)
            _ip("link", "set", bridge, "up", netns=hub)
            for node in range(nodes):
                inner, outer = cluster.interface(node, network), f"{prefix}h{node}e{network}"
                namespace = cluster.namespace(node)
                _ip("link", "add", inner, "netns", namespace, "type", "veth", "peer", "name",
                    outer, "netns", hub)
                _ip("addr", "add", f"{cluster.address(node, network)}/24", "dev", inner,
                    netns=namespace)
                _ip("link", "set", inner, "up", netns=namespace)
                _ip("link", "set", outer, "master", bridge, netns=hub)
                _ip("link", "set", outer, "up", netns=hub)
                link = cluster.rates[(node, network)]
                if link:
                    _cap(namespace, inner, link)
                    _cap(hub, outer, link)
        yield cluster
    finally:
        _cleanup(namespaces)


def two_node_cluster(rate: str = "1gbit") -> contextlib.AbstractContextManager[Cluster]:
    """The two-node cluster the older benchmarks use: one network, both links at ``rate``."""
    return netns_cluster(nodes=2, rate=rate, prefix="cs2n", subnet=0)


def _cleanup(namespaces: Sequence[str]) -> None:
    for namespace in namespaces:
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30)
