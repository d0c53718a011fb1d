"""What the CLI modules share: how a subcommand's parser is made (command_parser), the
arguments no config field holds (--nproc for bench, train, overlap, links; the COLLECTIVE list
for bench, tune), the check that output files can be written, for the commands that launch
ranks (made where they will be written: see collscope.runtime.entry.Job.output_check); every
other flag comes from its command's config dataclass through collscope.config_flags. Output
helpers live in collscope.console. No torch at import.

Every cli/<command>.py has one shape on purpose: ``add_parser`` (command_parser with the
command's help, description and examples, its config's flags, set_defaults) and ``handle``
(config_from, the checks, then the feature's run). `duplicates` pairs these modules by that
shape (monitor ~ watch, links ~ overlap, ...): a deliberate parallel, whose differences are each
command's words and config."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from collscope.collectives.table import COLLECTIVES
from collscope.config_flags import NPROC_HELP, HelpFormatter, add_flags
from collscope.records.jsonl import check_writable, check_writable_folder


def command_parser(commands: Any, name: str, help: str, description: str, epilog: str,
                   usage: str | None = None) -> argparse.ArgumentParser:
    """Subcommand ``name``'s parser: its one-line help, its description, and ``epilog``
    (examples, method, exit codes) after the flags, printed as written."""
    options = {"usage": usage} if usage else {}
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help, description=description, epilog=epilog,
        formatter_class=HelpFormatter, **options)
    return parser


def add_job_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                      config: type) -> None:
    """How a command that runs ranks is launched: --nproc (no config holds it: the launcher
    decides the ranks), then its config's --backend and --timeout."""
    parser.add_argument("--nproc", type=int, default=None, help=NPROC_HELP)
    add_flags(parser, config, ["backend", "timeout_s"])


def add_collectives_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("collectives", nargs="*", default=["all_reduce"], metavar="COLLECTIVE",
                        help=f"{', '.join(COLLECTIVES)} or all (default all_reduce)")


def outputs_check(*outputs: tuple[str, str | None],
                  folders: Sequence[tuple[str, str | None]] = ()) -> Callable[[], None]:
    """A Job.output_check for ``(flag, path)`` pairs: check_writable on each file, in order,
    then check_writable_folder on each of ``folders``."""
    def check() -> None:
        for flag, path in outputs:
            check_writable(flag, path)
        for flag, path in folders:
            check_writable_folder(flag, path)

    return check
