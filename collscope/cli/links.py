"""`collscope links`: the pairwise bandwidth matrix of a job, slow links and nodes, exit 1."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import add_job_arguments, command_parser, outputs_check
from collscope.config_flags import add_flags, config_from
from collscope.links.config import LinksConfig, LinksOutputs

EXAMPLES = """\
examples:
  collscope links --nproc 4 --backend gloo         # 4 local ranks: every rank pair
  torchrun --nnodes 16 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint node0:29500 \\
           -m collscope links --json links.jsonl   # one rank per node pair + every GPU pair
  srun -N 64 --ntasks-per-node 8 --gpus-per-node 8 python -m collscope links --per-gpu
  srun -N 1000 --ntasks-per-node 1 python -m collscope links --pairs random:8 -b 256M
  collscope report links.jsonl -o links.html       # the matrix as a heat map

Across nodes every node pair exchanges a message both ways (sendrecv), in rounds of disjoint
pairs (round-robin tournament: N-1 rounds for N nodes, N for odd N), one rank per node, or
every local rank at once with --per-gpu. Inside each node every rank (GPU) pair does the same,
compared with the link type the topology doctor reads (xGMI, NVLink, PCIe). time = median
receive completion over -n iterations; GB/s = size / time (1e9 B/s, nccl-tests' sendrecv busbw).
A link is slow below --fraction (default 70%) of the median of the links between healthy
nodes; a node slow on all its links is reported as the node. Rounds holding a failing link run
again (--confirm times, default 1): a link fails only if it fails every try. Bounded time: a
pair's exchanges in a round stop at --pair-budget (after one timed exchange); a confirmation
re-measures a failing pair at the smallest size latency cannot sway, and stops once its
median's verdict is decided (n // 2 + 1 iterations on one side of the limit).
exit codes: 0 every link and node ok, 1 a link or node failed (or a rank failed / timed out),
2 bad input.
"""


# Deliberately the shape of every subcommand's add_parser (command_parser with the command's
# own texts, then its config's flags): one declaration per command, as CONTRIBUTING.md
# asks; twin: cli/overlap, cli/tune.py.
def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "links",
        help="pairwise link matrix: which node, NIC or GPU pair is slow (exit 1)",
        description="Measure every node pair and GPU pair of the job; name slow links and "
                    "nodes. A cluster acceptance gate.", epilog=EXAMPLES)
    add_flags(p, LinksConfig, ["size_bytes", "iters", "warmup_iters", "pairs", "per_gpu",
                               "fraction", "expected_fraction", "confirm", "pair_budget_s",
                               "seed"])
    add_job_arguments(p, LinksConfig)
    add_flags(p, LinksOutputs)
    p.set_defaults(handler=handle, needs_torch=True)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.runtime.entry import Job, launch_or_spawn

    config = config_from(LinksConfig, args)
    outputs = config_from(LinksOutputs, args)

    def body(session: Any, launcher_name: str) -> int:
        from collscope.links import run as links_run
        from collscope.links.report import LinksWriter, render
        from collscope.links.verdicts import failed

        to_stdout = outputs.json == "-"
        writer = LinksWriter(outputs.json, session, launcher_name, config, time.time()) \
            if outputs.json and session.rank == 0 else None

        def progress(where: str, attempt: int, done: list[dict[str, Any]]) -> None:
            sys.stderr.write(f"collscope links: {where}: {len(done)} directions measured\n")
            if writer:
                writer.tries(attempt, done)

        outcome = links_run.run(config, session, on_round=progress)
        code = 0
        if outcome is not None:
            code = 1 if failed(outcome.links, outcome.nodes) else 0
            if writer:
                writer.finish(outcome, bool(code))
            if not to_stdout:
                render(outcome, config)
            if writer and writer.failure:    # measured and shown, but the file is short
                sys.stderr.write(f"collscope links: {writer.failure}\n")
                code = 1
        return links_run.agree_exit(session, code)

    return launch_or_spawn(Job("links", config.backend, config.timeout_s, args.nproc,
                               config.validate_for_job, body,
                               output_check=outputs_check(("--json", outputs.json))),  # rank 0's
                           argv)
