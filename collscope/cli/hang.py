"""`collscope hang PATH...`: the rank, host and collective a hung or timed-out job waits on,
from PyTorch Flight Recorder dumps and ncclras output."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import add_flags, config_from
from collscope.hang.config import HangConfig
from collscope.records.jsonl import check_writable

EXAMPLES = """\
examples:
  collscope hang /tmp/fr/                      # a folder of dumps: nccl_trace_rank_0, ...
  collscope hang dumps/*.json --json hang.jsonl
  collscope hang job4711_node-01_* job4711_node-02_*   # host names in the file names
  collscope hang fr/ --hosts hosts.json        # {"0": "node-01", "4": "node-02"}
  ncclras -f json > ras.json; collscope hang ras.json
  collscope report hang.jsonl -o hang.html     # groups x ranks: where each stopped

PATH: Flight Recorder dumps as PyTorch writes them (TORCH_FR_BUFFER_SIZE=2000 and
TORCH_FR_DUMP_TEMP_FILE=/shared/fr/trace_ with TORCH_NCCL_DUMP_ON_TIMEOUT=1, or
torch._C._distributed_c10d._dump_fr_trace / _dump_fr_trace_json), pickle or JSON, plain or
gzip/bzip2/xz; collscope watch's dump folders; ncclras text or -f json output. Pickles are
read with every class refused: a dump holding an object is refused, never loaded.
method: per process group, entries matched across members by collective_seq_id (p2p by
p2p_seq_id and peer); the first number not completed on every member is classified per
member (never entered, other op/size/dtype, issued but never completed, no dump); a hang
cascades across groups, so the waits form a graph whose sink components are named.
exit codes: 0 no hang or desync found, 1 one found, 2 bad input.
"""


def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "hang",
        help="my job hung: which rank, host and collective (Flight Recorder dumps, ncclras)",
        description="Name the rank, host and collective that a hung or timed-out job waits "
                    "on, from PyTorch Flight Recorder dumps and ncclras output: one verdict "
                    "first, then the evidence.", epilog=EXAMPLES)
    add_flags(p, HangConfig)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.hang import analyse_paths, render_text
    from collscope.hang.report import write_json_records

    config = config_from(HangConfig, args)
    check_writable("--json", config.json)
    analysis = analyse_paths(config.paths, hosts=read_hosts(config.hosts))
    if config.json:
        write_json_records(config.json, analysis, argv)
    if config.json != "-":
        import sys

        sys.stdout.write(render_text(analysis))
    return 1 if analysis.verdict.found else 0


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
