"""What the CLI modules share: the arguments no config field holds (--nproc for bench, train,
overlap, links; the COLLECTIVE list for bench, tune; the check that output files can be
written, for the commands that launch ranks (made where they will be written: see
collscope.runtime.entry.Job.output_check); every other flag comes from its command's config
dataclass through collscope.config_flags). Output helpers live in collscope.console.
No torch at import."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from collscope.collectives.table import COLLECTIVES
from collscope.config_flags import NPROC_HELP


def add_nproc_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--nproc", type=int, default=None, help=NPROC_HELP)


def add_collectives_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("collectives", nargs="*", default=["all_reduce"], metavar="COLLECTIVE",
                        help=f"{', '.join(COLLECTIVES)} or all (default all_reduce)")


def check_writable(flag: str, path: str | None) -> None:
    """An output FILE given to ``flag`` must be creatable before the ranks measure (a run
    should not end in a traceback after measuring); UsageError (exit 2) naming the flag."""
    import os

    from collscope.errors import UsageError

    if not path or path == "-":      # "-": stdout (collscope.records_io.JsonlWriter)
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise UsageError(f"{flag}: cannot write '{path}': folder {folder} does not exist or "
                         "is not writable")
    if os.path.isdir(path):
        raise UsageError(f"{flag}: cannot write '{path}': it is a folder; give a file path")


def outputs_check(*outputs: tuple[str, str | None]) -> Callable[[], None]:
    """A Job.output_check for ``(flag, path)`` pairs: check_writable on each, in order."""
    def check() -> None:
        for flag, path in outputs:
            check_writable(flag, path)

    return check
