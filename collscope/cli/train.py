"""`collscope train`: parse flags into a TrainConfig, launch or join ranks, print and record."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import add_job_arguments, command_parser, outputs_check
from collscope.config_flags import add_flags, config_from
from collscope.errors import ExitCode
from collscope.train.config import DDPKnobs, TrainConfig, TrainOutputs

EXAMPLES = """\
examples:
  collscope train                                   # tiny Llama, DDP, 2 gloo ranks (CPU)
  collscope train --sweep bucket_cap_mb=1,5,25,100 --sweep comm_hook=none,bf16 \\
                  --sweep gradient_as_bucket_view=0,1 --json sweep.jsonl
  collscope train --preset small --comm-hook powersgd --steps 20
  collscope train --comm-hook hierarchical --ranks-per-node 2 --nproc 4
  collscope train --parallel fsdp --preset 1b --trace traces/
  torchrun --nproc-per-node 8 -m collscope train --preset llama2-7b --parallel fsdp
  srun -N 2 --ntasks-per-node 8 python -m collscope train --preset 1b \\
       --sweep bucket_cap_mb=25,100 --sweep comm_hook=none,bf16

measured per configuration (each timed step runs twice on the same batch, with and without
gradient sync, interleaved): step time (median, spread), forward/backward/optimizer, exposed
comm = step - no-sync step, bytes per step, pure comm time of those bytes (collscope bench on
the same group), overlap = 1 - exposed / pure, tokens/s, peak memory, first and last loss.
before building the model every rank estimates its memory (see README) and exits 2 with the
estimate and what would fit when it exceeds free device memory (host memory on CPU); --force
runs anyway. Every run prints the estimate next to the measured peak.
exit codes: 0 ok, 1 a rank failed or timed out or --json failed while measuring, 2 bad input
or a model that does not fit. --json - : stdout carries the records only.
"""


# Deliberately the shape of every subcommand's add_parser (command_parser with the command's
# own texts, then its config's flags): one declaration per command, as CONTRIBUTING.md
# asks; twin: cli/model.py.
def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "train", help="Llama DDP/FSDP training: exposed comm, overlap, DDP knob sweeps",
        description="Train a randomly initialised Llama on synthetic tokens and measure how "
                    "much of each step is communication that compute does not hide.",
        epilog=EXAMPLES)
    model = p.add_argument_group("model")
    add_flags(model, TrainConfig, ["preset", "hidden", "layers", "heads", "seq_len",
                                   "batch_size", "dtype"])
    par = p.add_argument_group("parallelism")
    add_flags(par, TrainConfig, ["parallel"])
    add_flags(par, DDPKnobs, ["bucket_cap_mb", "gradient_as_bucket_view", "static_graph",
                              "comm_hook"])
    add_flags(par, TrainConfig, ["ranks_per_node", "hier_chunk_bytes", "sweep"])
    run = p.add_argument_group("measurement")
    add_flags(run, TrainConfig, ["steps", "warmup", "lr", "seed", "trace_dir", "trace_steps"])
    add_job_arguments(run, TrainConfig)
    add_flags(run, TrainConfig, ["force"])
    add_flags(run, TrainOutputs)
    p.set_defaults(handler=handle, needs_torch=True)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    return config_from(TrainConfig, args, knobs=config_from(DDPKnobs, args))


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.runtime.entry import Job, launch_or_spawn

    config = config_from_args(args)
    outputs = config_from(TrainOutputs, args)

    def body(session: Any, launcher_name: str) -> int:
        from collscope.train.measure import set_cpu_threads, train

        if session.device.type == "cpu":
            set_cpu_threads(session.launch.local_world_size)
        from collscope.train.report import Reporter

        reporter = Reporter(config, session, outputs.json, launcher_name) if session.rank == 0 \
            else None
        try:
            records = train(session, config, on_record=reporter.record if reporter else None)
            if reporter:
                reporter.finish(records)
        finally:
            if reporter:
                reporter.close()
        if reporter and reporter.failure:
            sys.stderr.write(f"collscope train: {reporter.failure}\n")
            return ExitCode.FOUND
        return ExitCode.OK

    def host_preflight(nproc: int, backend: str) -> None:
        from collscope.train.preflight import preflight_host

        preflight_host(config, nproc, backend)

    def rank_preflight(session: Any) -> None:
        from collscope.train.preflight import preflight_rank

        preflight_rank(session, config)

    return launch_or_spawn(Job("train", config.backend, config.timeout_s, args.nproc,
                               config.validate_for_job, body, host_preflight, rank_preflight,
                               # rank 0 writes --json; every rank its trace, on its node
                               output_check=outputs_check(("--json", outputs.json)),
                               node_output_check=outputs_check(
                                   folders=[("--trace", config.trace_dir)])),
                           argv)

