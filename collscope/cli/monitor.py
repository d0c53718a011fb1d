"""`collscope monitor`: parse flags into a MonitorConfig, then sample (one sampler per node)."""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import add_flags, config_from, usage_of
from collscope.errors import ExitCode
from collscope.monitor.config import MonitorConfig

EXAMPLES = """\
examples:
  collscope monitor                                # live view: GPUs, NICs, RDMA ports, memory
  collscope monitor --duration 60 --json mon.jsonl
  collscope monitor --prometheus 9400              # http://127.0.0.1:9400/metrics
  collscope monitor --prometheus 0.0.0.0:9400      # reachable from other hosts
  collscope monitor --interval 0.1 --summary-json s.json -- torchrun --nproc-per-node 8 train.py
  srun -N 2 --ntasks-per-node 8 collscope monitor --json mon.jsonl -- python train.py
      (under torchrun/srun/mpirun only local rank 0 samples; every rank runs the command;
       in a multi-node job each node writes mon.node<N>.jsonl, or use {host} / {node} in
       --json / --summary-json; {node} is 0 outside a job)

metrics (flat names in JSON Lines, gauges in Prometheus): cpu.percent, mem.used_bytes,
mem.total_bytes, net.<iface>.rx_bytes_per_s / tx_bytes_per_s, rdma.<dev>.<port>.rx_bytes_per_s
/ tx_bytes_per_s, gpu.<i>.util_percent, gpu.<i>.mem_used_bytes, gpu.<i>.power_w, ...
A metric the source does not report is absent, never 0. Rates are counter deltas over the
interval; rates in decimal units (1 MB/s = 1e6 B/s).
exit codes: the command's own (128 + N if signal N ended it); without a command 0, or 130 when
interrupted; 1 instead of 0 when --json / --summary-json could not be written during the run;
2 bad input (checked before the command starts).
"""


# Deliberately the shape of every subcommand's add_parser (command_parser with the command's
# own texts, then its config's flags): one declaration per command, as CONTRIBUTING.md
# asks; twin: cli/watch.py.
def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "monitor", help="live and recorded GPU, memory and network-bandwidth monitoring",
        description="Sample GPU utilization/memory/power, host CPU and memory, per-NIC and "
                    "per-RDMA-port bandwidth; show it live, record it as JSON Lines, serve it "
                    "to Prometheus, or wrap a command and summarise its run.",
        epilog=EXAMPLES,
        usage=usage_of("monitor", MonitorConfig, "[-- CMD ARGS...]"))
    add_flags(p, MonitorConfig)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.runtime.launchers import detect_launcher

    config = config_from(MonitorConfig, args)
    launch = detect_launcher(os.environ)
    _check_outputs(config, launch)
    if launch is not None and launch.local_rank != 0:
        # One sampler per node: the other local ranks only run the command (or nothing).
        if not config.command:
            return ExitCode.OK
        from collscope.monitor.wrap import check_command

        check_command(config.command)
        os.execvp(config.command[0], config.command)
    from collscope.monitor.run import run_monitor

    return run_monitor(config, launch)


def _check_outputs(config: MonitorConfig, launch: Any) -> None:
    """Every output path, as this node will name it, is writable before anything runs (on
    every rank, so a bad path stops the whole job alike); UsageError naming the flag."""
    from collscope.monitor.run import output_paths
    from collscope.records.jsonl import check_writable

    for flag, path in output_paths(config, socket.gethostname(), launch).items():
        check_writable(flag, path)
