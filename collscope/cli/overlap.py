"""`collscope overlap`: a matmul and an all_reduce alone and together; overlap efficiency."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import add_job_arguments, command_parser, outputs_check
from collscope.config_flags import add_flags, config_from
from collscope.errors import ExitCode, OutputError
from collscope.overlap import OverlapConfig, OverlapOutputs

EXAMPLES = """\
examples:
  collscope overlap                                 # 2 gloo ranks: 512^3 matmul, 4 MiB
  collscope overlap --matmul-dim 1024 -b 16M --iters 30 --json overlap.jsonl
  collscope overlap --flops 1T -b 1G                # on GPUs: ~1 TFLOP matmul, 1 GiB
  torchrun --nproc-per-node 8 -m collscope overlap -b 256M

t_compute, t_comm, t_both: medians over --iters of the slowest rank's time, the three modes
interleaved. Together = all_reduce(async_op=True) launched, matmul issued while it is in flight
(GPUs: separate CUDA streams; CPU: gloo's threads), then waited for.
overlap efficiency = (t_compute + t_comm - t_both) / min(t_compute, t_comm).
exit codes: 0 ok, 1 a rank failed or timed out or --json could not be written, 2 bad input.
--json - : stdout carries the records only. At least 2 ranks.
"""


# Deliberately the shape of every subcommand's add_parser (command_parser with the command's
# own texts, then its config's flags): one declaration per command, as CONTRIBUTING.md
# asks; twin: cli/links.py.
def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "overlap", help="does communication hide under compute? (matmul + all_reduce)",
        description="Run a matmul and an all_reduce alone and together and report how much of "
                    "the shorter one hides under the longer.", epilog=EXAMPLES)
    add_flags(p.add_mutually_exclusive_group(), OverlapConfig, ["matmul_dim", "flops"])
    add_flags(p, OverlapConfig, ["size_bytes", "iters", "warmup", "dtype"])
    add_job_arguments(p, OverlapConfig)
    add_flags(p, OverlapOutputs)
    p.set_defaults(handler=handle, needs_torch=True)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.runtime.entry import Job, launch_or_spawn

    config = config_from(OverlapConfig, args)
    outputs = config_from(OverlapOutputs, args)

    def body(session: Any, launcher_name: str) -> int:
        from collscope.overlap.run import measure, render
        from collscope.train.measure import set_cpu_threads

        if session.device.type == "cpu":
            set_cpu_threads(session.launch.local_world_size)
        result = measure(config, session)
        if session.rank == 0:
            if outputs.json != "-":         # `--json -`: stdout carries the records only
                for line in render(result, session.label):
                    print(line, flush=True)
            if outputs.json:
                try:
                    _write_json(outputs.json, config, result, session, launcher_name)
                except OutputError as error:   # measured: the table above has the result
                    sys.stderr.write(f"collscope overlap: {error}\n")
                    return ExitCode.FOUND
        return ExitCode.OK

    return launch_or_spawn(Job("overlap", config.backend, config.timeout_s, args.nproc,
                               config.validate_for_job, body,
                               output_check=outputs_check(("--json", outputs.json))),  # rank 0's
                           argv)


def _write_json(path: str, config: OverlapConfig, result: Any, session: Any,
                launcher_name: str) -> None:
    from dataclasses import asdict

    from collscope.records.jsonl import write_records
    from collscope.records.run import RunRecord

    write_records(path, [RunRecord.for_session("overlap", session, launcher_name, result.timing,
                                               {"config": asdict(config)}).to_dict(),
                         result.to_dict()])
