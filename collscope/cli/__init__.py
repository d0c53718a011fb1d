"""collscope's command line: thin, fast to start (no torch until a subcommand needs it)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from typing import NoReturn

from collscope import __version__
from collscope.config_flags import HelpFormatter
from collscope.errors import ExitCode, OutputError, RankFailure, UsageError, exit_codes_help

DESCRIPTION = """\
Find and fix the communication bottlenecks of multi-GPU training, on torch.distributed.
Launch it the way you launch training: torchrun, srun, mpirun, or on its own (--nproc).
"""

EPILOG = """\
examples:
  collscope doctor                             # check this node's stack, explain each problem
  collscope bench                              # all_reduce sweep on local ranks (GPUs or 2 gloo)
  collscope bench all -b 1M -e 1G              # every collective, 1 MiB to 1 GiB
  torchrun --nproc-per-node 8 -m collscope bench all_reduce --json ar.jsonl
  srun -N2 --ntasks-per-node 8 python -m collscope bench all_gather -e 8G
  collscope monitor --json run.jsonl -- torchrun --nproc-per-node 8 train.py
  collscope report bench.jsonl all_reduce_perf.log -o report.html

each command's --help says which exit codes it returns and what they mean there.
"""


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse that reports bad input on one line (flag and accepted values) and exits 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message} (see {self.prog} --help)\n")
        raise SystemExit(ExitCode.USAGE)


# Order of subcommands in --help; every module of this package with an ``add_parser`` is a
# subcommand (modules must not import torch at import time: --help has to stay fast).
COMMAND_ORDER = ("doctor", "bench", "train", "overlap", "monitor", "watch", "trace", "links",
                 "model", "tune", "hang", "report", "compare", "import_")


def command_modules() -> list[str]:
    import pkgutil

    found = {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    return sorted(found, key=lambda n: (COMMAND_ORDER.index(n) if n in COMMAND_ORDER
                                        else len(COMMAND_ORDER), n))


def build_parser() -> argparse.ArgumentParser:
    import importlib

    epilog = EPILOG + textwrap.fill(exit_codes_help(), 92) + "\n"
    parser = OneLineErrorParser(prog="collscope", description=DESCRIPTION, epilog=epilog,
                                formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"collscope {__version__}")
    # dest "subcommand": a command's own fields may be named "command" (monitor's, watch's)
    commands = parser.add_subparsers(dest="subcommand", metavar="COMMAND",
                                     parser_class=OneLineErrorParser)
    for name in command_modules():
        module = importlib.import_module(f"collscope.cli.{name}")
        if hasattr(module, "add_parser"):
            module.add_parser(commands)
    return parser


def run() -> None:
    """The ``collscope`` command and ``python -m collscope``: main, then leave the process
    (at once in a rank that closed its own group: ``runtime.spawn.leave_process`` says why)."""
    from collscope.runtime.spawn import leave_process

    raise SystemExit(leave_process(main()))


def main(argv: Sequence[str] | None = None) -> int:
    from collscope.runtime import spawn

    spawn.rank_entry = main             # what local ranks forked by this process run
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "subcommand", None):
        parser.print_help()
        return ExitCode.OK
    try:
        if getattr(args, "needs_torch", False):   # set by the commands that run collectives
            from collscope.runtime.torch_required import require_torch

            require_torch(args.subcommand)
        return int(args.handler(args, argv))
    except UsageError as error:
        sys.stderr.write(f"collscope {args.subcommand}: {error}\n")
        return ExitCode.USAGE
    except (RankFailure, OutputError) as error:
        sys.stderr.write(f"collscope {args.subcommand}: {error}\n")
        return ExitCode.FOUND
    except BrokenPipeError:
        # The reader of stdout went away (`collscope ... | head`): end quietly, as cat does.
        from collscope.runtime.spawn import quiet_closed_stdout

        quiet_closed_stdout()
        return ExitCode.PIPE_CLOSED
    except KeyboardInterrupt:
        sys.stderr.write(f"collscope {args.subcommand}: interrupted\n")
        return ExitCode.INTERRUPTED
