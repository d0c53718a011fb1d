"""Flags shared by the commands that run ranks (bench, train, overlap)."""

from __future__ import annotations

import argparse


def add_launch_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                         timeout_help: str = "seconds a collective may wait before every rank "
                                             "exits (default 300)") -> None:
    parser.add_argument("--nproc", type=int, default=None,
                        help="spawn N local ranks (default: visible GPUs, else 2); not under "
                             "a launcher")
    parser.add_argument("--backend", default="auto",
                        help="auto (nccl/rccl with GPUs, else gloo), nccl, gloo, mpi, ucc")
    parser.add_argument("--timeout", type=float, default=300.0, help=timeout_help)
