"""`collscope watch`: parse flags into a WatchConfig, then run the command watched."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import add_flags, config_from, usage_of
from collscope.watch.config import WatchConfig

EXAMPLES = """\
examples:
  collscope watch -- torchrun --nproc-per-node 8 train.py
  collscope watch --prometheus 9400 --json watch.jsonl -- torchrun --nproc-per-node 8 train.py
  srun --ntasks-per-node 1 collscope watch -- torchrun --nnodes $N ... train.py   (per node)
  srun collscope watch -- python train.py                                        (per rank)
  collscope watch --hang-after 120 --on-hang kill --dump-dir dumps -- torchrun ... train.py

Every Python process of the command gets the agent (a sitecustomize bootstrap on PYTHONPATH,
keeping the job's own); it arms when the process makes its default process group. Rank 0's
agent matches collectives across ranks through the job's own c10d store and names a rank
whose lateness rose (finding watch.straggler); a collective pending longer than --hang-after
makes every rank dump its Flight Recorder and main-thread stack, then collscope hang's
verdict is printed. Details: docs/watch.md.
exit codes: the command's own (128 + N if signal N ended it); 124 when --on-hang kill ended
the job; 2 bad input (checked before the command starts).
"""


# Deliberately the shape of every subcommand's add_parser (command_parser with the command's
# own texts, then its config's flags): one declaration per command, as CONTRIBUTING.md
# asks; twin: cli/monitor.py.
def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "watch", help="live per-rank communication telemetry inside your own job",
        description="Run your launch command with collscope's agent in every rank: late "
                    "ranks named as it happens (Flight Recorder + the job's store), a stall "
                    "turned into dumps and a verdict before the watchdog fires.",
        epilog=EXAMPLES,
        usage=usage_of("watch", WatchConfig, "-- COMMAND [ARGS...]"))
    add_flags(p, WatchConfig)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.monitor.wrap import check_command
    from collscope.records.jsonl import check_writable
    from collscope.watch.run import check_dump_dir, run_watch

    config = config_from(WatchConfig, args)
    check_writable("--json", config.json)
    check_dump_dir(config.dump_dir)
    check_command(config.command)
    return run_watch(config)
