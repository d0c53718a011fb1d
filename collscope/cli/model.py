"""`collscope model`: fit a communication cost model, predict collectives and training steps.

Subcommands: ``fit`` (measurements -> model file), ``predict`` (collective x sizes x node
counts, nccl-tests table shape), ``plan`` (one training step's communication at each node
count) and ``check`` (predictions against measurements the fit did not use).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from collscope.cli import _model_views as views
from collscope.config_flags import add_flags, config_from
from collscope.console import write_json
from collscope.errors import UsageError
from collscope.model.config import PlanRequest, PredictRequest
from collscope.records.jsonl import write_records

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
Formulas (ring, tree, hierarchical) are in the README and collscope/model/formulas.py.
exit codes: 0 ok, 2 bad input (unreadable file, model of another version, collective not in
the model, node counts < 1, inputs without result rows).
"""


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "model", help="fit a cost model from measurements; predict collectives and steps",
        description="Fit a communication cost model from bench records and nccl-tests / "
                    "rccl-tests logs; predict collectives and training steps at scale.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="model_command", metavar="SUBCOMMAND")
    fit = sub.add_parser(
        "fit", help="measurements -> model file",
        description="Fit one robust alpha-beta model per measured group (collective x nodes x "
                    "ranks per node). Example: collscope model fit a.log b.jsonl -o m.json "
                    "--holdout-nodes 8")
    fit.add_argument("inputs", nargs="+", metavar="INPUT",
                     help="collscope JSON Lines (bench, import) or nccl-tests / rccl-tests logs")
    fit.add_argument("-o", "--output", required=True, metavar="MODEL.json",
                     help="model file to write ('-' for stdout)")
    fit.add_argument("--holdout-nodes", default=None, metavar="N[,N...]",
                     help="leave these node counts out of the fit (validate with check)")
    fit.add_argument("--json", metavar="FILE", help="write the fit summary as JSON ('-': stdout)")
    predict = sub.add_parser(
        "predict", help="time and busbw per size and node count",
        description="Predicted time and busbw per size for each node count, in nccl-tests' "
                    "table shape, with the uncertainty band. Example: collscope model predict "
                    "h100.json --collective all_reduce --nodes 8,16 --ranks-per-node 8 "
                    "--sizes 1M-8G")
    predict.add_argument("model", metavar="MODEL.json")
    predict.add_argument("--collective", required=True, help="e.g. all_reduce")
    add_flags(predict, PredictRequest, ["nodes", "ranks_per_node"])
    predict.add_argument("--sizes", default=None, metavar="MIN-MAX",
                         help="size range, e.g. 1M-8G (steps of -f)")
    predict.add_argument("-b", "--min-bytes", default="1M", help="smallest size (default 1M)")
    predict.add_argument("-e", "--max-bytes", default="1G", help="largest size (default 1G)")
    predict.add_argument("-f", "--step-factor", type=int, default=2,
                         help="multiply the size by this each step (default 2)")
    add_flags(predict, PredictRequest, ["algo"])
    predict.add_argument("-d", "--dtype", default="float",
                         help="element type for the count column (default float)")
    predict.add_argument("--json", metavar="FILE",
                         help="write prediction records as JSON Lines ('-': stdout only)")
    plan = sub.add_parser(
        "plan", help="one training step's communication at each node count",
        description="The collectives of one DDP or FSDP step (collscope train's parameter "
                    "accounting), their predicted time, step time, tokens/s, scaling "
                    "efficiency and the DDP knob that helps most, per node count. Example: "
                    "collscope model plan m.json --preset llama2-7b --nodes 1,2,4 "
                    "--ranks-per-node 8 --step-compute-ms 900 --overlap 0.5")
    plan.add_argument("model", metavar="MODEL.json")
    add_flags(plan, PlanRequest, ["preset", "params", "nodes", "ranks_per_node", "parallel",
                                  "bucket_cap_mb", "comm_hook", "dtype"])
    plan.add_argument("--train", metavar="TRAIN.jsonl",
                      help="`collscope train` records: compute per step (no-sync step) and "
                           "overlap come from the measured DDP default (or first) record")
    add_flags(plan, PlanRequest, ["step_compute_ms", "overlap"])
    plan.add_argument("--json", metavar="FILE", help="write the plan as JSON ('-': stdout)")
    check = sub.add_parser(
        "check", help="predictions against held-out measurements",
        description="Busbw error of the model's predictions against measured rows, median and "
                    "max per collective, layout and size band. Example: collscope model check "
                    "h100.json h100_8node.log")
    check.add_argument("model", metavar="MODEL.json")
    check.add_argument("inputs", nargs="+", metavar="INPUT")
    check.add_argument("--algo", default="auto",
                       help="flat rows: auto (fastest of ring and tree, as NCCL/RCCL pick), "
                            "ring (gloo's all_reduce) or tree")
    check.add_argument("--json", metavar="FILE", help="write the check as JSON ('-': stdout)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    command = getattr(args, "model_command", None)
    if command is None:
        raise UsageError("give a subcommand: fit, predict, plan or check (see collscope model "
                         "--help)")
    return {"fit": fit, "predict": predict, "plan": plan, "check": check}[command](args)


def _say(line: str) -> None:
    sys.stderr.write(f"collscope model: {line}\n")


def _measurements(paths: list[str], flag: str = "INPUT") -> Any:
    from collscope.model.data import collect
    from collscope.records.load import InputError, distinct_inputs, load_inputs

    # Copies of one input are not repeated runs: counting them would fake a zero spread.
    paths, repeats = distinct_inputs(paths)
    for repeat in repeats:
        _say(f"warning: {flag}: {repeat}")
    try:
        inputs = load_inputs(paths)
    except InputError as error:
        raise UsageError(f"{flag}: {error}") from None
    found = collect(inputs)
    if not found.groups:
        reasons = found.skipped + found.warnings
        why = f" ({reasons[0]})" if reasons else ""
        raise UsageError(f"{flag}: no result rows with a known node layout in "
                         f"{', '.join(paths)}{why}")
    return found


def load_model(path: str) -> Any:
    from collscope.model.costmodel import CostModel, ModelError

    try:
        with open(path, encoding="utf-8") as source:
            data = json.load(source)
    except OSError as error:
        raise UsageError(f"MODEL: cannot read {path} ({error.strerror or error})") from None
    except ValueError as error:
        raise UsageError(f"MODEL: {path} is not JSON ({error})") from None
    try:
        return CostModel.from_dict(data, path)
    except ModelError as error:
        raise UsageError(f"MODEL: {error}") from None


# -- fit ---------------------------------------------------------------------------------------


def fit(args: argparse.Namespace) -> int:
    from collscope.model.config import parse_counts
    from collscope.model.costmodel import build

    if args.output == "-" and args.json == "-":
        raise UsageError("--json: '-' (stdout) is taken by -o -; give --json a file name")
    held = parse_counts(args.holdout_nodes, "--holdout-nodes") if args.holdout_nodes else []
    measurements = _measurements(args.inputs)
    present = sorted({key.nodes for key in measurements.groups})
    absent = [count for count in held if count not in present]
    if absent:
        raise UsageError(f"--holdout-nodes: no {','.join(map(str, absent))}-node data in the "
                         f"inputs (node counts present: {', '.join(map(str, present))})")
    model = build(measurements, held)
    if not model.groups and all(key.nodes in held for key in measurements.groups):
        raise UsageError(f"--holdout-nodes: {','.join(map(str, held))} holds out every group "
                         "of the inputs; nothing is left to fit")
    if not model.groups:
        raise UsageError("INPUT: no group could be fitted: "
                         + "; ".join(model.diagnostics[-3:] or ["no rows left"]))
    document = model.to_dict()
    if args.output == "-":
        write_json("-", document)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(json.dumps(document, indent=1, allow_nan=False) + "\n")
        except OSError as error:
            raise UsageError(f"-o/--output: cannot write {args.output} "
                             f"({error.strerror or error})") from None
    for line in model.diagnostics:
        _say(line)
    if args.json:
        write_json(args.json, {"model": args.output, "groups": document["groups"],
                               "diagnostics": model.diagnostics,
                               "fit_method": document["fit_method"]})
    if args.output != "-" and args.json != "-":
        views.print_fit(model, args.output, held)
    return 0


# -- predict -----------------------------------------------------------------------------------


def _sizes(args: argparse.Namespace) -> list[int]:
    from collscope.bench.config import sweep_sizes
    from collscope.units import parse_size

    if args.sizes:
        low_text, sep, high_text = args.sizes.partition("-")
        if not sep:
            raise UsageError(f"--sizes: '{args.sizes}' is not MIN-MAX, e.g. 1M-8G")
        low, high = parse_size(low_text, "--sizes"), parse_size(high_text, "--sizes")
    else:
        low, high = parse_size(args.min_bytes, "-b"), parse_size(args.max_bytes, "-e")
    if low < 1 or high < low:
        raise UsageError(f"--sizes/-b/-e: {low}-{high} bytes: need 1 <= MIN <= MAX")
    if args.step_factor < 2:
        raise UsageError(f"-f/--step-factor: {args.step_factor} must be >= 2")
    return sweep_sizes(low, high, args.step_factor)


def predict(args: argparse.Namespace) -> int:
    from collscope.collectives.dtypes import canonical_dtype
    from collscope.collectives.table import canonical_name
    from collscope.model.costmodel import ModelError
    from collscope.model.costmodel import predict as run_prediction

    model = load_model(args.model)
    dtype = canonical_dtype(args.dtype)
    if dtype is None:
        raise UsageError(f"-d/--dtype: '{args.dtype}' is not a type collscope knows; use "
                         "float, half, bfloat16, double, int32, ...")
    collective = canonical_name(args.collective) or args.collective
    request = config_from(PredictRequest, args, collective=collective, sizes=_sizes(args),
                          dtype=dtype)
    blocks = []
    try:
        for nodes in request.nodes:
            blocks.append((nodes, run_prediction(model, request.collective, request.sizes,
                                                 nodes, request.ranks_per_node, request.algo)))
    except ModelError as error:
        raise UsageError(str(error)) from None
    records = [r.to_dict() for _, block in blocks for r in block]
    if args.json:
        write_records(args.json, records)
    if args.json != "-":
        for _, block in blocks:
            views.print_nccl_table(block, request, args.model)
    return 0


# -- check -------------------------------------------------------------------------------------


def check(args: argparse.Namespace) -> int:
    from collscope.model.check import check as run_check

    if args.algo not in ("auto", "ring", "tree"):
        raise UsageError(f"--algo: '{args.algo}' is not accepted; use auto, ring or tree")
    model = load_model(args.model)
    flat = ("ring", "tree") if args.algo == "auto" else (args.algo,)
    report = run_check(model, _measurements(args.inputs), flat)
    if not report.rows:
        raise UsageError("INPUT: no measured group could be predicted by the model: "
                         + "; ".join(report.skipped[-2:] or ["nothing in common"]))
    if args.json:
        write_json(args.json, {"model": args.model, **report.to_dict()})
    if args.json != "-":
        rows = [[b.collective, f"{b.nodes}x{b.ranks_per_node}", b.band, str(b.rows),
                 f"{b.median_error_pct:.1f}%", f"{b.max_error_pct:.1f}%",
                 "yes" if b.in_sample else "no"] for b in report.bands]
        views.print_table(f"model check: {args.model} against {', '.join(args.inputs)}",
                    ["collective", "layout", "size band", "rows", "median |error|",
                     "max |error|", "fitted on it"], rows, left=["collective", "size band"])
        print(f"error: {report.method}")
        for line in report.skipped:
            _say(line)
    return 0


# -- plan --------------------------------------------------------------------------------------


def _train_record(path: str) -> tuple[dict[str, Any], list[str]]:
    """The DDP default (or first) train record of ``path``, and the loader's warnings."""
    from collscope.records.load import InputError, load_input

    try:
        source = load_input(path)
    except InputError as error:
        raise UsageError(f"--train: {error}") from None
    records = [r for run in source.runs for r in run.train]
    if not records:
        raise UsageError(f"--train: {path} holds no `collscope train` records")
    return (next((r for r in records if r.get("is_ddp_default")), records[0]),
            [f"--train: {line}" for line in source.warnings])


def _train_mismatches(record: dict[str, Any], request: PlanRequest, path: str) -> list[str]:
    """Where the --train record's setting differs from the plan's: its compute and overlap
    carry over as measured, which the reader must know when they differ."""
    from collscope.model.config import PLAN_DTYPES

    config = record.get("config")
    config = config if isinstance(config, dict) else {}
    label = record.get("label")
    notes = []
    measured = config.get("dtype")
    if measured and PLAN_DTYPES.get(str(measured), measured) != PLAN_DTYPES[request.dtype]:
        fix = (f"give --dtype {measured} to match" if measured in PLAN_DTYPES
               else f"plan --dtype accepts {', '.join(PLAN_DTYPES)}")
        notes.append(f"--train: '{label}' in {path} was measured in {measured}, the plan "
                     f"sizes messages in --dtype {request.dtype}; its compute per step and "
                     f"overlap are used as measured in {measured} ({fix})")
    preset = config.get("preset")
    if request.preset and preset and preset != request.preset:
        notes.append(f"--train: '{label}' in {path} trained preset {preset}, the plan is for "
                     f"--preset {request.preset}; its compute per step is {preset}'s")
    return notes


def plan(args: argparse.Namespace) -> int:
    from collscope.model.config import PLAN_DTYPES
    from collscope.model.costmodel import ModelError
    from collscope.model.plan import PlanConfig
    from collscope.model.plan import plan as run_plan
    from collscope.train.config import PRESETS

    request = config_from(PlanRequest, args)
    model = load_model(args.model)
    compute_ms, overlap = request.step_compute_ms, request.overlap
    compute_how = "--step-compute-ms" if compute_ms is not None else ""
    overlap_how = "--overlap" if overlap is not None else ""
    notes: list[str] = []
    if args.train:
        record, notes = _train_record(args.train)
        notes += _train_mismatches(record, request, args.train)
        if compute_ms is None:
            compute_ms = float(record["step_time_ms_nosync"])
            compute_how = (f"{args.train}: median step without gradient sync of "
                           f"'{record.get('label')}'")
        if overlap is None and record.get("overlap_fraction") is not None:
            overlap = float(record["overlap_fraction"])
            overlap_how = f"{args.train}: measured overlap of '{record.get('label')}'"
    if overlap is None:
        overlap, overlap_how = 0.0, "assumed: nothing hidden; give --train or --overlap"
    spec = PRESETS[request.preset] if request.preset else None
    params = spec.parameter_count() if spec else int(request.params or 0)
    config = PlanConfig(spec, params, request.parallel, request.bucket_cap_mb,
                        request.comm_hook, PLAN_DTYPES[request.dtype])
    tokens = spec.batch_size * spec.seq_len if spec else None
    try:
        rows = run_plan(model, config, request.nodes, request.ranks_per_node, overlap,
                        compute_ms, tokens)
    except ModelError as error:
        raise UsageError(str(error)) from None
    element = config.element_size
    header = {"model": args.model, "preset": request.preset, "params": params,
              "dtype": request.dtype, "parallel": request.parallel,
              "bucket_cap_mb": request.bucket_cap_mb, "comm_hook": request.comm_hook,
              "overlap": overlap, "overlap_source": overlap_how, "step_compute_ms": compute_ms,
              "step_compute_source": compute_how or "none (step time, tokens/s and scaling "
                                                    "efficiency need --step-compute-ms or --train)",
              "tokens_per_rank_per_step": tokens, "notes": notes}
    for line in notes:              # after the plan: refused input stays one line
        _say(f"note: {line}")
    if args.json:
        write_json(args.json, {**header, "rows": [r.to_dict() for r in rows]})
    if args.json == "-":
        return 0
    views.print_plan(header, rows, params, element, request)
    return 0


