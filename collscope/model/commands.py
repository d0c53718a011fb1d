"""What each `collscope model` subcommand does, from its request to its result (no printing).

The CLI (collscope.cli.model) builds a request from its flags, calls one of ``fit``,
``predict``, ``check`` and ``plan`` here, and renders what comes back
(collscope.model.views); the JSON Lines records of each result come from ``*_records``.
Bad input raises UsageError naming the flag or file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from collscope.errors import UsageError
from collscope.model.check import CheckReport
from collscope.model.config import (
    PLAN_DTYPES,
    CheckRequest,
    FitRequest,
    PlanRequest,
    PredictRequest,
)
from collscope.model.costmodel import CostModel, ModelError
from collscope.model.data import Measurements
from collscope.model.plan import PlanConfig
from collscope.records.model import (
    CheckRecord,
    ModelFitRecord,
    ModelGroupRecord,
    PlanRecord,
    PlanRowRecord,
    PredictionRecord,
)


def measurements(paths: list[str], flag: str = "INPUT") -> tuple[Measurements, list[str]]:
    """The grouped rows of ``paths`` and a warning per input left out as a repeat."""
    from collscope.model.data import collect
    from collscope.records.load import InputError, distinct_inputs, load_inputs

    # Copies of one input are not repeated runs: counting them would fake a zero spread.
    paths, repeats = distinct_inputs(paths)
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
    return found, [f"warning: {flag}: {repeat}" for repeat in repeats]


def load_model(path: str) -> CostModel:
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


def fit(request: FitRequest) -> tuple[CostModel, list[str]]:
    """(the fitted model, warnings about the inputs); the model file is not written yet."""
    from collscope.model.costmodel import build
    held = request.holdout_nodes
    found, warnings = measurements(request.inputs)
    present = sorted({key.nodes for key in found.groups})
    absent = [count for count in held if count not in present]
    if absent:
        raise UsageError(f"--holdout-nodes: no {','.join(map(str, absent))}-node data in the "
                         f"inputs (node counts present: {', '.join(map(str, present))})")
    model = build(found, held)
    if not model.groups and all(key.nodes in held for key in found.groups):
        raise UsageError(f"--holdout-nodes: {','.join(map(str, held))} holds out every group "
                         "of the inputs; nothing is left to fit")
    if not model.groups:
        raise UsageError("INPUT: no group could be fitted: "
                         + "; ".join(model.diagnostics[-3:] or ["no rows left"]))
    return model, warnings


def save_model(model: CostModel, path: str) -> None:
    """The model file (indented JSON); '-' is stdout."""
    from collscope.console import write_json

    document = model.to_dict()
    if path == "-":
        write_json("-", document)
        return
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(json.dumps(document, indent=1, allow_nan=False) + "\n")
    except OSError as error:
        raise UsageError(f"-o/--output: cannot write {path} ({error.strerror or error})"
                         ) from None


def fit_records(model: CostModel, output: str) -> list[dict[str, Any]]:
    document = model.to_dict()
    summary = ModelFitRecord(output, document["fit_method"], document["band_method"],
                             model.held_out_nodes, model.diagnostics)
    groups = (ModelGroupRecord(**asdict(g.key), world_size=g.key.world_size,
                               fit=g.fit.to_dict()) for g in model.groups)
    return [summary.to_dict(), *(group.to_dict() for group in groups)]


# -- predict -----------------------------------------------------------------------------------


def predict(request: PredictRequest) -> list[list[PredictionRecord]]:
    """One block of prediction records (one per size) per node count."""
    from collscope.model.costmodel import predict as run_prediction

    model = load_model(request.model)
    try:
        return [run_prediction(model, request.collective, request.sizes, nodes,
                               request.ranks_per_node, request.algo) for nodes in request.nodes]
    except ModelError as error:
        raise UsageError(str(error)) from None


# -- check -------------------------------------------------------------------------------------


def check(request: CheckRequest) -> tuple[CheckReport, list[str]]:
    """(the check of the model against the inputs, warnings about the inputs)."""
    from collscope.model.check import check as run_check

    model = load_model(request.model)
    found, warnings = measurements(request.inputs)
    report = run_check(model, found, request.flat_algos)
    if not report.rows:
        raise UsageError("INPUT: no measured group could be predicted by the model: "
                         + "; ".join(report.skipped[-2:] or ["nothing in common"]))
    return report, warnings


def check_records(report: CheckReport, model_path: str) -> list[dict[str, Any]]:
    summary = CheckRecord(model_path, report.method, report.band_method, report.skipped,
                          **report.coverage())
    return [summary.to_dict(), *(b.to_dict() for b in report.bands),
            *(r.to_dict() for r in report.rows)]


# -- plan --------------------------------------------------------------------------------------


@dataclass
class PlanResult:
    header: PlanRecord              # what was planned, and where compute and overlap came from
    rows: list[PlanRowRecord]
    config: PlanConfig
    notes: list[str] = field(default_factory=list)


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
    chosen = next((r for r in records if r.is_ddp_default), records[0])
    return chosen.to_dict(), [f"--train: {line}" for line in source.warnings]


def _train_mismatches(record: dict[str, Any], request: PlanRequest, path: str) -> list[str]:
    """Where the --train record's setting differs from the plan's: its compute and overlap
    carry over as measured, which the reader must know when they differ."""
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


def plan(request: PlanRequest) -> PlanResult:
    from collscope.model.plan import plan as run_plan
    from collscope.train.config import PRESETS

    model = load_model(request.model)
    compute_ms, overlap = request.step_compute_ms, request.overlap
    compute_how = "--step-compute-ms" if compute_ms is not None else ""
    overlap_how = "--overlap" if overlap is not None else ""
    notes: list[str] = []
    if request.train:
        record, notes = _train_record(request.train)
        notes += _train_mismatches(record, request, request.train)
        if compute_ms is None:
            compute_ms = float(record["step_time_ms_nosync"])
            compute_how = (f"{request.train}: median step without gradient sync of "
                           f"'{record.get('label')}'")
        if overlap is None and record.get("overlap_fraction") is not None:
            overlap = float(record["overlap_fraction"])
            overlap_how = f"{request.train}: measured overlap of '{record.get('label')}'"
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
    header = PlanRecord(
        request.model, request.preset, params, request.dtype, request.parallel,
        request.bucket_cap_mb, request.comm_hook, overlap, overlap_how, compute_ms,
        compute_how or "none (step time, tokens/s and scaling efficiency need "
                       "--step-compute-ms or --train)", tokens, notes)
    return PlanResult(header, rows, config, notes)


def plan_records(result: PlanResult) -> list[dict[str, Any]]:
    return [result.header.to_dict(), *(row.to_dict() for row in result.rows)]
