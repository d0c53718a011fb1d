"""`collscope bench`: parse flags into a BenchConfig, launch or join ranks; rank 0's output is
bench/report.py's Reporter."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from collscope.bench.config import BenchConfig, BenchOutputs
from collscope.cli._common import (
    add_collectives_argument,
    add_job_arguments,
    command_parser,
    outputs_check,
)
from collscope.config_flags import add_flags, config_from
from collscope.errors import ExitCode

EXAMPLES = """\
examples:
  collscope bench                                  # all_reduce, 8 B .. 64 MiB (CPU) / 4 GiB (GPU)
  collscope bench all -b 1K -e 256M -f 4           # every collective
  collscope bench all_gather reduce_scatter -d bfloat16 -n 50 -w 10
  collscope bench --op sum,max -d float,int32 --json ar.jsonl --csv ar.csv
  collscope bench --target-precision 0.02          # adaptive: +-2% CI of the median per size
  collscope bench --nproc 4 --backend gloo         # 4 local CPU ranks
  collscope bench --algo hierarchical -b 1M -e 64M # node-aware all_reduce, same table
  collscope bench --per-rank -b 64K -e 16M         # the late rank of each size, and a finding
  collscope bench --nccl-json ar.json              # nccl-tests' -J JSON (version 3, per-iter)
  torchrun --nproc-per-node 8 -m collscope bench
  torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d \\
           --rdzv-endpoint node0:29500 -m collscope bench all_reduce -e 8G
  srun -N 2 --ntasks-per-node 8 --gpus-per-node 8 python -m collscope bench
  mpirun -np 16 -x MASTER_ADDR=node0 -x MASTER_PORT=29500 python -m collscope bench

algbw = size / time and busbw = algbw x factor (2(n-1)/n all_reduce; (n-1)/n all_gather,
reduce_scatter, alltoall; 1 broadcast, reduce, sendrecv), exactly as nccl-tests; GB/s = 1e9 B/s.
time = mean per op over the timed loop (device events on GPUs, perf_counter on CPU).
exit codes: 0 ok, 1 a rank failed or timed out or an output file failed while measuring,
2 bad input, 3 a result failed verification. --json - : stdout carries the records only.
"""


def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "bench", help="collective benchmarks with nccl-tests' numbers",
        description="Benchmark collectives on torch.distributed; the table reads like "
                    "nccl-tests'.", epilog=EXAMPLES)
    add_collectives_argument(p)
    add_flags(p, BenchConfig, ["min_bytes", "max_bytes", "step_factor", "step_bytes", "iters",
                               "warmup_iters", "dtypes", "ops", "root", "check", "blocking",
                               "average"])
    add_flags(p.add_mutually_exclusive_group(), BenchConfig, ["out_of_place", "in_place"])
    add_flags(p, BenchConfig, ["target_precision", "time_budget_s", "algo", "ranks_per_node",
                               "hier_chunk_bytes"])
    add_job_arguments(p, BenchConfig)
    add_flags(p, BenchOutputs)
    p.set_defaults(handler=handle, needs_torch=True)


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    return config_from(BenchConfig, args, collectives=args.collectives or ["all_reduce"])


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.runtime.entry import Job, launch_or_spawn

    config = config_from_args(args)
    outputs = config_from(BenchOutputs, args)
    # rank 0 writes them (bench.report.Reporter)
    check = outputs_check(("--json", outputs.json), ("--csv", outputs.csv),
                          ("--nccl-json", outputs.nccl_json))

    def body(session: Any, launcher_name: str) -> int:
        from collscope.bench import runner
        from collscope.bench.report import Reporter

        with ExitStack() as stack:
            reporter = stack.enter_context(Reporter(config, session, outputs, launcher_name)) \
                if session.rank == 0 else None
            results = runner.run(config, session,
                                 on_row=reporter.row if reporter else None,
                                 on_collective=reporter.collective if reporter else None,
                                 own_op_times=outputs.per_rank)
        for failure in reporter.failures if reporter else []:
            sys.stderr.write(f"collscope bench: {failure}\n")
        if runner.any_wrong(results):
            return ExitCode.VERIFY
        return ExitCode.FOUND if reporter and reporter.failures else ExitCode.OK

    return launch_or_spawn(Job("bench", config.backend, config.timeout_s, args.nproc,
                               config.validate_for_job, body, output_check=check), argv)
