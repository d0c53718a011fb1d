"""Flags shared by the commands that run ranks (bench, train, overlap)."""

from __future__ import annotations

import argparse

from collscope.config_flags import BACKEND_HELP, NPROC_HELP


def add_launch_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                         timeout_help: str = "seconds a collective may wait before every rank "
                                             "exits (default 300)") -> None:
    add_nproc_argument(parser)
    parser.add_argument("--backend", default="auto", help=BACKEND_HELP)
    parser.add_argument("--timeout", type=float, default=300.0, help=timeout_help)


def add_nproc_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--nproc", type=int, default=None, help=NPROC_HELP)
