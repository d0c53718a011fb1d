"""`collscope doctor`: check this node (or a bundle, or every node of a job) and explain fixes."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import add_flags, config_from
from collscope.doctor.config import DoctorConfig, DoctorModes
from collscope.errors import ExitCode

EXAMPLES = """\
examples:
  collscope doctor                                 # this node: report grouped by area
  collscope doctor --json doctor.jsonl             # run, doctor_finding, doctor_node records
  collscope doctor --collect node0.tar.gz          # also save every raw output read
  collscope doctor --from node0.tar.gz             # check a bundle anywhere (or a directory)
  collscope doctor --explain env.ib-hca            # what a check looks at, and why
  torchrun --nnodes 2 --nproc-per-node 8 ... -m collscope doctor --all-ranks
  srun -N 4 --ntasks-per-node 1 collscope doctor --all-ranks   # what differs between nodes
  collscope doctor --all-ranks --nproc 2           # cluster mode on local ranks

checks: gpu.inventory gpu.vendor-library gpu.torch-visible torch.build gpu.idle-memory
topology.links topology.fabric topology.numa host.numa-balancing host.iommu host.pcie-acs
host.memlock network.interfaces network.rdma-ports network.roce-gids ucx.build nccl.log
nccl.socket-fallback nccl.partial-gdr env.socket-ifname env.gloo-ifname env.ib-hca
env.debug-knobs env.nccl-debug env.obsolete env.typo selftest.allreduce selftest.bandwidth
tools.availability tools.recognised tools.unrecognised tools.gpu-tool-failed
cluster.differences
exit codes: 0 nothing failed (warnings allowed), 1 a check failed, 2 bad input.
"""


# Deliberately the shape of every subcommand's add_parser (command_parser with the command's
# own texts, then its config's flags): one declaration per command, as CONTRIBUTING.md
# asks; twin: cli/hang.py.
def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "doctor",
        help="check GPUs, topology, RCCL/NCCL, UCX, RDMA, env and kernel settings",
        description="Check this node's communication stack (or a captured bundle, or every "
                    "node of a job): each finding says what was found, why it matters and how "
                    "to fix it.", epilog=EXAMPLES)
    add_flags(p, DoctorConfig, ["json", "collect", "source"])
    add_flags(p, DoctorModes, ["explain"])
    add_flags(p, DoctorConfig, ["selftest", "all_ranks", "nproc", "backend", "timeout_s",
                                "tool_timeout_s"])
    add_flags(p, DoctorModes, ["selftest_rank", "selftest_timeout"])   # internal
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.errors import UsageError

    modes = config_from(DoctorModes, args)
    if modes.selftest_rank:
        from collscope.doctor.selftest import rank_main

        return rank_main(modes.selftest_rank, modes.selftest_timeout)
    if modes.explain is not None:
        from collscope.doctor.checks import RULES, explain

        text = explain(modes.explain)
        if text is None:
            raise UsageError(f"--explain: unknown check {modes.explain!r}; known: "
                             f"{', '.join(sorted(RULES))}")
        if args.json:  # --json: stdout carries JSON only (read before the config is checked)
            entry = RULES[modes.explain]
            text = json.dumps({"id": entry.id, "area": entry.area,
                               "explanation": entry.explanation}) + "\n"
        sys.stdout.write(text)
        return ExitCode.OK
    from collscope.doctor.bundle import check_target

    config = config_from(DoctorConfig, args)
    if config.all_ranks:
        from collscope.doctor.cluster import run_cluster

        return run_cluster(config, list(argv))  # --collect: checked by each node's writer
    if config.source is None and not _local_rank_zero():
        return ExitCode.OK  # under a launcher without --all-ranks: one report per node
    if config.collect:
        check_target(config.collect)  # before minutes of probing, by the one that writes
    from collscope.doctor.run import run_node

    return run_node(config)


def _local_rank_zero() -> bool:
    """False for the other local ranks of a torchrun/srun/mpirun job (they stay quiet)."""
    import os

    from collscope.errors import UsageError
    from collscope.runtime.launchers import detect_launcher

    try:
        launch = detect_launcher(os.environ)
    except UsageError:
        return True
    return launch is None or launch.local_rank == 0
