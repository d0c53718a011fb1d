"""`collscope model`: fit a communication cost model, predict collectives and training steps.

Subcommands: ``fit`` (measurements -> model file), ``predict`` (collective x sizes x node
counts, nccl-tests table shape), ``plan`` (one training step's communication at each node
count) and ``check`` (predictions against measurements the fit did not use).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from collscope.cli._common import command_parser
from collscope.config_flags import add_flags, config_from
from collscope.errors import ExitCode, UsageError
from collscope.model.config import CheckRequest, FitRequest, PlanRequest, PredictRequest

EXAMPLES = """\
examples:
  collscope model fit h100_2node.log h100_4node.log -o h100.json
  collscope model fit bench_*.jsonl rccl-tests.log -o cluster.json --holdout-nodes 8
  collscope model predict h100.json --collective all_reduce --nodes 8,16 --ranks-per-node 8
  collscope model predict h100.json --collective all_reduce --nodes 16 --ranks-per-node 8 \\
      -b 1M -e 8G --algo ring --json pred.jsonl
  collscope model plan cluster.json --preset llama2-7b --nodes 1,2,4 --ranks-per-node 8
  collscope model plan cluster.json --preset llama2-7b --nodes 4,16 --ranks-per-node 8 \\
      --train train.jsonl --comm-hook hierarchical
  collscope model check h100.json h100_8node.log

Model per group (collective x N nodes x R ranks): t = alpha + S x f(n) / B (nccl-tests busbw
convention), fitted in log space with a robust loss; outlier rows are reported and left out.
Fabric levels: intra-node from single-node groups, inter-node from the nearest multi-node group.
Formulas (ring, tree, hierarchical) are in docs/model.md and collscope/model/formulas.py.
Band: typical run-to-run spread plus the fit's misfit near the size; runs much slower than
their repeats are tail runs, said as such and left out. fit column: in-range, or how far the
size / node count lies outside those fitted (x factor); the band does not cover that.
--json FILE: JSON Lines records, each with "kind".
exit codes: 0 ok, 2 bad input (unreadable file, model of another version, collective not in
the model, node counts < 1, inputs without result rows).
"""
EXIT_CODES = EXAMPLES[EXAMPLES.index("exit codes:"):]


# Each subcommand: its name, one-line help, description (with an example) and request config.
SUBCOMMANDS: list[tuple[str, str, str, type]] = [
    ("fit", "measurements -> model file",
     "Fit one robust alpha-beta model per measured group (collective x nodes x ranks per "
     "node). Example: collscope model fit a.log b.jsonl -o m.json --holdout-nodes 8",
     FitRequest),
    ("predict", "time and busbw per size and node count",
     "Predicted time and busbw per size for each node count, in nccl-tests' table shape, with "
     "the typical band and how far each row extrapolates. Example: collscope model predict "
     "h100.json --collective all_reduce --nodes 8,16 --ranks-per-node 8 --sizes 1M-8G",
     PredictRequest),
    ("plan", "one training step's communication at each node count",
     "The collectives of one DDP or FSDP step (collscope train's parameter accounting), their "
     "predicted time, step time, tokens/s, scaling efficiency and the DDP knob that helps "
     "most, per node count. Example: collscope model plan m.json --preset llama2-7b --nodes "
     "1,2,4 --ranks-per-node 8 --step-compute-ms 900 --overlap 0.5", PlanRequest),
    ("check", "predictions against held-out measurements",
     "Busbw error of the model's predictions against measured rows, median and max per "
     "collective, layout and size band, and how many measured medians lie in the typical "
     "band. Example: collscope model check h100.json h100_8node.log", CheckRequest),
]


# Deliberately the shape of every subcommand's add_parser (command_parser with the command's
# own texts, then its config's flags): one declaration per command, as CONTRIBUTING.md
# asks; twin: cli/train.py.
def add_parser(commands: Any) -> None:
    p = command_parser(
        commands, "model", help="fit a cost model from measurements; predict collectives and steps",
        description="Fit a communication cost model from bench records and nccl-tests / "
                    "rccl-tests logs; predict collectives and training steps at scale.",
        epilog=EXAMPLES)
    sub = p.add_subparsers(dest="model_command", metavar="SUBCOMMAND")
    for name, summary, description, request in SUBCOMMANDS:
        add_flags(sub.add_parser(name, epilog=EXIT_CODES, help=summary, description=description),
                  request)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    command = getattr(args, "model_command", None)
    if command is None:
        raise UsageError("give a subcommand: fit, predict, plan or check (see collscope model "
                         "--help)")
    return {"fit": fit, "predict": predict, "plan": plan, "check": check}[command](args)


def _say(line: str) -> None:
    sys.stderr.write(f"collscope model: {line}\n")


def _write_records(target: str, records: list[dict[str, Any]]) -> None:
    from collscope.records.jsonl import write_records

    write_records(target, records)


def fit(args: argparse.Namespace) -> int:
    from collscope.model import commands
    from collscope.model.views import print_fit

    request = config_from(FitRequest, args)
    model, warnings = commands.fit(request)
    for line in warnings:
        _say(line)
    commands.save_model(model, request.output)
    for line in model.diagnostics:
        _say(line)
    if request.json:
        _write_records(request.json, commands.fit_records(model, request.output))
    if request.output != "-" and request.json != "-":
        print_fit(model, request.output, request.holdout_nodes)
    return ExitCode.OK


def predict(args: argparse.Namespace) -> int:
    from collscope.model import commands
    from collscope.model.views import print_nccl_table

    request = config_from(PredictRequest, args)
    blocks = commands.predict(request)
    if request.json:
        _write_records(request.json, [r.to_dict() for block in blocks for r in block])
    if request.json != "-":
        for block in blocks:
            print_nccl_table(block, request.dtype, request.model)
    return ExitCode.OK


def check(args: argparse.Namespace) -> int:
    from collscope.model import commands
    from collscope.model.views import print_check

    request = config_from(CheckRequest, args)
    report, warnings = commands.check(request)
    for line in warnings:
        _say(line)
    if request.json:
        _write_records(request.json, commands.check_records(report, request.model))
    if request.json != "-":
        print_check(report, request)
        for line in report.skipped:
            _say(line)
    return ExitCode.OK


def plan(args: argparse.Namespace) -> int:
    from collscope.model import commands
    from collscope.model.views import print_plan

    request = config_from(PlanRequest, args)
    result = commands.plan(request)
    for line in result.notes:       # after the plan: refused input stays one line
        _say(f"note: {line}")
    if request.json:
        _write_records(request.json, commands.plan_records(result))
    if request.json != "-":
        print_plan(result, request)
    return ExitCode.OK
