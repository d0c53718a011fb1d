"""What the CLI modules share: the arguments no config field holds (--nproc for bench, train,
overlap, links; the COLLECTIVE list for bench, tune; every other flag comes from its command's
config dataclass through collscope.config_flags). Output helpers live in collscope.console.
No torch at import."""

from __future__ import annotations

import argparse

from collscope.collectives.table import COLLECTIVES
from collscope.config_flags import NPROC_HELP


def add_nproc_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--nproc", type=int, default=None, help=NPROC_HELP)


def add_collectives_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("collectives", nargs="*", default=["all_reduce"], metavar="COLLECTIVE",
                        help=f"{', '.join(COLLECTIVES)} or all (default all_reduce)")
