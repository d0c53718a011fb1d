"""`collscope tune`: sweep RCCL/NCCL settings in fresh bench jobs, judge them, hand them over.

Thin: the flags are TuneConfig's fields (config_flags); collscope.tune.command runs it."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import add_collectives_argument, command_parser
from collscope.config_flags import add_flags, config_from
from collscope.tune.config import TuneConfig

EXAMPLES = """\
examples:
  collscope tune --preset rccl-basic -b 1M -e 1G          # 8 local GPUs, one bench job per trial
  collscope tune --space NCCL_PROTO=LL,LL128,Simple --space NCCL_MIN_NCHANNELS=32,64 \\
                 --rounds 5 --json tune.jsonl --env-out best.env --tuner-csv tuner.conf
  salloc -N2 --ntasks-per-node 8 --gpus-per-node 8 \\
      collscope tune all_reduce all_gather --preset nccl-basic --budget 1800   # trials via srun
  collscope tune --launch 'mpirun -np 16 -hostfile hosts -x NCCL_ALGO -x NCCL_PROTO {cmd}' \\
                 --space NCCL_ALGO=Ring,Tree --space NCCL_PROTO=LL128,Simple
  collscope tune --space NCCL_ALGO=Ring,Tree --print-commands --trials-dir runs/  # run by hand
  collscope tune --space NCCL_ALGO=Ring,Tree --merge runs/*.jsonl --env-out best.env

Each trial is a fresh `python -m collscope bench ... --in-place --json FILE` job with the
configuration in its environment (NCCL/RCCL read most variables once per process). The
baseline ("defaults") is this environment: a space variable keeps its inherited value or stays
unset; GLOO_SOCKET_IFNAME, which has no usable unset state, takes its first listed value.
Configurations run in interleaved rounds (order rotated each round). Per size, the speed-up
over the baseline (baseline time / configuration time, paired by round) gets a t-interval on
its log (scipy); "faster" means the whole interval lies above 1 + --min-gain (default 2%).
A value that is itself a list is written with '+': GLOO_SOCKET_IFNAME=eth0+eth1.
exit codes: 0 done (whether or not something beat the defaults), 1 the baseline failed or no
trial succeeded, 2 bad input.
"""


# Deliberately the shape of every subcommand's add_parser (command_parser with the command's
# own texts, then its config's flags): one declaration per command, as CONTRIBUTING.md
# asks; twin: cli/links.py.
def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "tune",
        help="find the RCCL/NCCL settings that make collectives fastest, with proof",
        description="Sweep communication settings in fresh bench jobs, in interleaved rounds, "
                    "and keep what beats the defaults beyond noise.", epilog=EXAMPLES)
    add_collectives_argument(p)
    add_flags(p, TuneConfig)
    p.set_defaults(handler=handle, needs_torch=True)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.tune.command import run

    return run(config_from(TuneConfig, args, collectives=args.collectives), os.environ)
