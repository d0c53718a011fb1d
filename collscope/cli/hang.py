"""`collscope hang PATH...`: the rank, host and collective a hung or timed-out job waits on,
from PyTorch Flight Recorder dumps and ncclras output."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import add_flags, config_from
from collscope.errors import ExitCode
from collscope.hang.config import HangConfig
from collscope.records.jsonl import check_writable
from collscope.runtime import flight_recorder as fr

EXAMPLES = """\
examples:
  collscope hang /tmp/fr/                      # a folder of dumps: nccl_trace_rank_0, ...
  collscope hang dumps/*.json --json hang.jsonl
  collscope hang job4711_node-01_* job4711_node-02_*   # host names in the file names
  collscope hang fr/ --hosts hosts.json        # {"0": "node-01", "4": "node-02"}
  ncclras -f json > ras.json; collscope hang ras.json
  collscope report hang.jsonl -o hang.html     # groups x ranks: where each stopped

{path}
method: per process group, entries matched across members by collective_seq_id (p2p by
p2p_seq_id and peer); the first number not completed on every member is classified per
member (never entered, other op/size/dtype, issued but never completed, no dump); a hang
cascades across groups, so the waits form a graph whose sink components are named.
exit codes: 0 no hang or desync found, 1 one found, 2 bad input, 3 no verdict: every dump
is empty (the Flight Recorder was off; the warning says what to set).
"""
NOTHING_RECORDED_EXIT = 3


def _path_help() -> str:
    """PATH's paragraph: how each supported torch writes its dumps, from
    runtime.flight_recorder's table."""
    def how(row: fr.Release, torch: str) -> str:
        return (f"torch {torch}: {row.buffer_variable}=2000 and "
                f"{row.dump_file_variable}=/shared/fr/trace_ with {fr.DUMP_ON_TIMEOUT}=1, or "
                f"torch._C._distributed_c10d.{row.dump_pickle} / {row.dump_json}")
    oldest, newest = fr.RELEASES[0], fr.RELEASES[-1]
    old = [r for r in fr.RELEASES if r.dump_json == oldest.dump_json]
    new = next(r for r in fr.RELEASES if r.dump_json == newest.dump_json)
    old_span = f"{old[0].since[0]}.{old[0].since[1]}-{old[-1].until[0]}.{old[-1].until[1]}"
    return textwrap.fill(
        f"PATH: Flight Recorder dumps as PyTorch writes them ("
        f"{how(newest, f'>= {new.since[0]}.{new.since[1]}')}; {how(oldest, old_span)}, NCCL/RCCL "
        "only), pickle or JSON, plain or gzip/bzip2/xz; collscope watch's dump folders; ncclras "
        "text or -f json output. Pickles are read with every class refused: a dump holding an "
        "object is refused, never loaded.", 92, break_on_hyphens=False, break_long_words=False)


# Deliberately the shape of every subcommand's add_parser (command_parser with the command's
# own texts, then its config's flags): one declaration per command, as CONTRIBUTING.md
# asks; twin: cli/doctor.py.
def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "hang",
        help="my job hung: which rank, host and collective (Flight Recorder dumps, ncclras)",
        description="Name the rank, host and collective that a hung or timed-out job waits "
                    "on, from PyTorch Flight Recorder dumps and ncclras output: one verdict "
                    "first, then the evidence.",
        epilog=EXAMPLES.replace("{path}", _path_help()))
    add_flags(p, HangConfig)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    import sys

    from collscope.hang import analyse_paths, render_text
    from collscope.hang.formats import NothingRecorded
    from collscope.hang.report import write_json_records

    config = config_from(HangConfig, args)
    check_writable("--json", config.json)
    try:
        analysis = analyse_paths(config.paths, hosts=read_hosts(config.hosts))
    except NothingRecorded as empty:
        sys.stderr.write(f"collscope hang: warning: {empty}\n")
        return NOTHING_RECORDED_EXIT
    if config.json:
        write_json_records(config.json, analysis, argv)
    if config.json != "-":
        sys.stdout.write(render_text(analysis))
    return ExitCode.FOUND if analysis.verdict.found else ExitCode.OK


def read_hosts(path: str | None) -> dict[int, str] | None:
    from collscope.errors import UsageError
    from collscope.hang.config import parse_hosts

    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return parse_hosts(handle.read())
    except OSError as error:
        raise UsageError(f"--hosts: cannot read {path}: {error.strerror or error}") from None
