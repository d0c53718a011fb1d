"""`collscope tune --launch` wrapper for the emulated cluster: one torchrun agent per namespace.

usage: netns_tune_launch.py PREFIX NODES NETWORKS SUBNET RANKS_PER_NODE PYTHON -m collscope ...

The cluster (benchmarks/netns_cluster.py) must already exist. The trial's GLOO_SOCKET_IFNAME
names node 0's interface on one network (PREFIXn0eK); every node then uses its own interface
on that same network, as real nodes that name their NICs alike would. The rest of the
environment tune gave this process (the trial's variables) is passed to every agent.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from netns_cluster import Cluster  # noqa: E402

from collscope.records.run import recorded_env  # noqa: E402
from collscope.runtime.spawn import free_loopback_port  # noqa: E402


def main(argv: list[str]) -> int:
    prefix, nodes, networks, subnet, ranks = argv[0], *map(int, argv[1:5])
    command = argv[5:]
    module_args = command[command.index("-m") + 1:]
    cluster = Cluster(prefix, nodes, networks, subnet)
    wanted = os.environ.get("GLOO_SOCKET_IFNAME", "")
    network = next((k for k in range(networks) if cluster.interface(0, k) == wanted), None)
    if network is None:
        sys.stderr.write(f"netns_tune_launch: GLOO_SOCKET_IFNAME={wanted!r} is none of "
                         f"{[cluster.interface(0, k) for k in range(networks)]}\n")
        return 2
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")}
    env.update(recorded_env())
    env.pop("GLOO_SOCKET_IFNAME")      # pinned per node by network=
    results = cluster.torchrun(ranks, free_loopback_port(), module_args, timeout=300, env=env,
                               network=network)
    for result in results:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
    return next((r.returncode for r in results if r.returncode), 0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
