"""`collscope trace TRACE...`: the communication of the user's own job, from its profiler
traces, against the cluster's measured curve."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import add_flags, config_from
from collscope.errors import ExitCode
from collscope.records.jsonl import check_writable
from collscope.trace.config import TraceConfig

EXAMPLES = """\
examples:
  collscope trace traces/                         # a folder: one trace per rank
  collscope trace rank0.json.gz rank1.json.gz --steps 10:20
  collscope trace traces/ --baseline bench.jsonl all_reduce_perf.log --json trace.jsonl
  collscope trace --baseline bench.jsonl --baseline all_reduce_perf.log traces/
  collscope train --nproc 4 --trace tr/ && collscope trace tr/
  collscope trace host*/traces/*.json.gz --clock-align on   # hosts whose clocks differ
  collscope trace traces/ --memory-mib 4096      # more ranks read at once (default 1024)

TRACE: torch.profiler / Kineto Chrome traces (.json, .json.gz; `collscope train --trace`
writes them), or folders of them. Ranks come from the trace's distributedInfo, else from
"rank<N>" in the file name.
measured: GPU kernel times of communication kernels (CPU-only gloo traces: the backend's CPU
spans, said so); exposed comm = time a communication kernel runs while no compute kernel does;
overlap = comm time overlapped by compute / comm time (HolisticTraceAnalysis'
get_comm_comp_overlap); busbw with nccl-tests' factors and the p50 kernel time; late rank =
the rank ready last for a matched call (its kernel start; gloo: its c10d op), on clocks
aligned to the lowest rank's when --clock-align applies: per rank the median over
synchronising collectives (all_reduce, all_gather, reduce_scatter, alltoall, barrier) of its
end - that rank's end, less a Theil-Sen drift where established (its 95% CI excludes 0 and
the CI's bound nearest 0 moves the aligned times over the trace by more than the spread;
chained through sub-groups by weighted least squares when fewer than 3 calls span every
rank), spread = MAD; lateness undecidable when the skew
judged <= 3 x that spread (straggler: per step the rank its most-delayed call waited on;
one-sided binomial test over the steps, Bonferroni-corrected);
efficiency = busbw / the --baseline busbw at the same size and rank count.
exit codes: 0 ok (also when there is no communication), 2 bad input.
"""


def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "trace", help="your job's profiler traces: collectives, exposed comm, late rank, "
                      "efficiency vs bench",
        description="Analyse torch.profiler traces of a training job: which collectives it "
                    "issues, how much of each step is exposed communication, which rank is "
                    "late, and how far each collective falls short of the cluster's measured "
                    "bandwidth.", epilog=EXAMPLES)
    add_flags(p, TraceConfig)
    p.set_defaults(handler=handle)


def traces_after_baseline(traces: list[str], baseline: list[str],
                          ) -> tuple[list[str], list[str]]:
    """(TRACE, --baseline) once TRACE is given back: ``--baseline`` takes every value up to
    the next flag, so in `trace --baseline bl.jsonl traces/` it took the trace too. When no
    TRACE is left, its trailing values that name a trace (a folder, a .json / .json.gz file;
    baselines are bench JSON Lines and nccl-tests logs) are TRACE; the first value stays a
    baseline. `--baseline FILE` repeated, or TRACE first, needs none of this."""
    from pathlib import Path

    from collscope.trace.analyze import TRACE_SUFFIXES

    if traces or len(baseline) < 2:
        return traces, baseline
    split = len(baseline)
    while split > 1 and (baseline[split - 1].endswith(TRACE_SUFFIXES)
                         or Path(baseline[split - 1]).is_dir()):
        split -= 1
    return baseline[split:], baseline[:split]


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.trace.analyze import analyse
    from collscope.trace.report import render, write_json_records

    traces, baseline = traces_after_baseline(args.paths, args.baseline)
    config = config_from(TraceConfig, args, paths=traces, baseline=baseline)
    check_writable("--json", config.json)      # before the analysis, not a traceback after it
    result = analyse(config)
    if config.json:
        write_json_records(config.json, result, argv)
    if config.json != "-":
        render(result)
    return ExitCode.OK
