"""The one launch flag that no config holds: --nproc (bench, train, overlap, links).

Every other flag comes from its command's config dataclass (collscope.config_flags)."""

from __future__ import annotations

import argparse

from collscope.config_flags import NPROC_HELP


def add_nproc_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--nproc", type=int, default=None, help=NPROC_HELP)
