"""nccl-tests' JSON output (``-J FILE``, nccl-tests 2.18+; file version 3 is read, 1-2 too) as
the same typed records as the text log.

The structure, as ``src/util.cu`` of NVIDIA/nccl-tests writes it (one object, on one line)::

    {"version": 3, "start_time": "YYYY-MM-DD HH:MM:SS", "args": [argv...],
     "env": ["NAME=VALUE", ...], "nccl_version": 22902,
     "config": {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes",
                "step_factor" | "step_bytes", "warmup_iters", "iterations",
                "aggregated_iterations", "validation", ["bitwise_repeats"], "graph",
                "blocking_collectives", "per_iter_timing", ["per_iter_skip"], "parallel_init",
                "devices": [{"rank", "group", "pid", "hostname", "device", "device_hex",
                             "device_info"}, ...]},          # one entry per process
     "results": [{"size", "count", "type", "redop", "root": "    -1",
                  "out_of_place": {"time" | "cpu_time", "alg_bw", "bus_bw",
                                   "nwrong": number | null, ["bitwise": {...}]} | null,
                  ["out_of_place_per_iter": {"skipped_iterations", "min_us", "max_us",
                       "avg_us", "p50_us", "p95_us", "p99_us", "stdev_us", "cv_pct",
                       "times_us": [...], ["per_process_max_times_us": [[...], ...]]}],
                  "in_place": {...}, ["in_place_per_iter": {...}],
                  "actual_iterations", "experiment_name"}, ...],
     "out_of_bounds": {"count", "okay": "true" | "false"},
     ["bitwise_mismatches": {"count", "okay"}],
     "average_bus_bandwidth": {"bandwidth", "okay": "true" | "false" | "unchecked"},
     "errors": ["..."], "end_time": "..."}

Booleans are the strings "true"/"false"; numbers are ``%lf`` (6 decimals), NaN the string
"nan" (infinity is printed bare, ``inf``, which is not JSON: it is read as unknown). A run that
died leaves the object unclosed: it is closed after the last complete value, with a warning.
The device list has the first device of each process only: with ``-g``/``-t`` > 1 the other
ranks are added by nccl-tests' own rule (rank = process x nThread·nGpus + i, device = first + i),
without a name.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from typing import Any

from collscope.parsers.common import Parsed
from collscope.parsers.nccl_tests import patterns
from collscope.parsers.nccl_tests.command_line import parse_command_line
from collscope.parsers.nccl_tests.records import (
    DeviceLine,
    Footer,
    ParsedTest,
    Placement,
    Row,
    TestParams,
    decode_nccl_version_code,
    parse_num,
)

KNOWN_VERSIONS = (1, 2, 3)
_BARE_NON_FINITE = re.compile(r"(?<=[:\[,])(\s*)(-?(?:inf|nan))(?=\s*[,\]}])", re.I)


def looks_like_nccl_tests_json(text: str) -> bool:
    head = text.lstrip()[:4096]
    return head.startswith("{") and '"version"' in head and (
        '"args"' in head or '"nccl_version"' in head or '"config"' in head)


def load_lenient(text: str) -> tuple[Any, list[str]]:
    """JSON with nccl-tests' slips repaired: bare inf/nan, a document cut off mid-run. Floats
    stay the strings printed (``parse_float=str``) so that their precision is known."""
    warnings: list[str] = []
    try:
        return json.loads(text, parse_float=str), warnings
    except ValueError:
        pass
    fixed = _BARE_NON_FINITE.sub(r'\1"\2"', text)
    try:
        return json.loads(fixed, parse_float=str), warnings
    except ValueError:
        pass
    closed = _close_cut_document(fixed)
    if closed is not None:
        warnings.append("the JSON ends before its end (the run was cut off?): read up to its "
                        "last complete value")
        return closed, warnings
    return None, ["not JSON that can be read, even after closing it"]


def _close_cut_document(text: str, tries: int = 200) -> Any:
    """The document cut after its last complete value, with the brackets still open closed."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []       # (end of a complete value, closers needed there)
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
            cuts.append((i + 1, "".join(reversed(stack))))
        elif char == "," and stack:
            cuts.append((i, "".join(reversed(stack))))
    for end, closers in reversed(cuts[-tries:]):
        try:
            return json.loads(text[:end] + closers, parse_float=str)
        except ValueError:
            continue
    return None


def _text(value: Any) -> str | None:
    """A printed number's text (floats are kept as strings), None for null/absent/odd."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, str)):
        return str(value).strip()
    return None


def _number(value: Any) -> float | None:
    text = _text(value)
    return None if text is None else parse_num(text)


def _int(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None


def _status(value: Any) -> str | None:
    return {"true": "OK", "false": "FAILED"}.get(str(value).lower())


def json_placement(data: Any, per_iter: Any, where: str,
                   size_bytes: int | None = None) -> tuple[Placement | None, str]:
    """One placement object (and its per-iteration block) as a Placement, or why not.

    A valid time with a non-number bandwidth (nccl-tests writes ``"bus_bw":"nan"``) keeps the
    placement: algbw is recomputed as size / time (nccl-tests' definition) when ``size_bytes``
    is given, and the missing busbw is NaN, for the importer to recompute from the collective's
    bus factor once the collective and world size are known."""
    if not isinstance(data, dict):
        return None, "" if data is None else f"{where} is not an object"
    time_key = "time" if "time" in data else "cpu_time"
    texts = [_text(data.get(key)) for key in (time_key, "alg_bw", "bus_bw")]
    time_us, algbw, busbw = (None if t is None else parse_num(t) for t in texts)
    problem = ""
    if time_us is None:
        return None, f"{where}: time/alg_bw/bus_bw not numbers ({texts})"
    if algbw is None and size_bytes is not None and time_us > 0:
        algbw = size_bytes / time_us / 1e3
        problem = f"{where}: alg_bw {texts[1]!r} not a number: recomputed as size / time"
    if algbw is None:
        return None, f"{where}: time/alg_bw/bus_bw not numbers ({texts})"
    if busbw is None:
        busbw = math.nan
        problem = (problem + "; " if problem else f"{where}: ") + (
            f"bus_bw {texts[2]!r} not a number: kept with its time, busbw recomputed from "
            "algbw x the bus factor where the collective and world size are known")
    wrong_value = _number(data.get("nwrong"))
    more: dict[str, str] = {}
    if isinstance(per_iter, dict):
        for key, name in (("min_us", "i_min"), ("max_us", "i_max"), ("p50_us", "i_p50"),
                          ("p95_us", "i_p95"), ("p99_us", "i_p99"), ("cv_pct", "i_cv%")):
            text = _text(per_iter.get(key))
            if text is not None and parse_num(text) is not None:
                more[name] = text
    return Placement(time_us=time_us, algbw_gbs=algbw, busbw_gbs=busbw,
                     wrong=None if wrong_value is None else int(wrong_value), error=None,
                     time_text=texts[0] or "", algbw_text=texts[1] or "",
                     busbw_text=texts[2] or "", check_text=_text(data.get("nwrong")),
                     more=more), problem


def parse_nccl_tests_json(text: str) -> Parsed[list[ParsedTest]]:
    """The one test of an nccl-tests JSON file (empty when it is not one)."""
    data, warnings = load_lenient(text)
    if not isinstance(data, dict):
        return Parsed(value=[], warnings=warnings or ["the JSON document is not an object"])
    test = ParsedTest(index=0, first_line=1, last_line=max(1, text.count("\n") + 1))
    version = data.get("version")
    if version not in KNOWN_VERSIONS:
        warnings.append(f"JSON file version {version!r} is not one collscope knows "
                        f"{KNOWN_VERSIONS}; read as version 3")
    test.info["json_version"] = str(version)
    for key in ("start_time", "end_time"):
        if isinstance(data.get(key), str):
            test.info[key] = data[key]
    # collscope bench --nccl-json: args is the nccl-tests equivalent, this the real command.
    own = [a for a in _list(data.get("collscope_args")) if isinstance(a, str)]
    if own:
        test.info["collscope_command"] = shlex.join(own)
    _read_command(data, test)
    code = _int(data.get("nccl_version"))
    if code:
        test.versions["nccl"] = decode_nccl_version_code(code)
    config = data.get("config")
    config = config if isinstance(config, dict) else {}
    test.params = _params(config)
    test.devices = _devices(config.get("devices"), test.params, warnings)
    test.started, test.concluded = True, "end_time" in data
    results = data.get("results")
    results = results if isinstance(results, list) else []
    for index, entry in enumerate(results):
        row, problems = _row(entry, f"results[{index}]")
        warnings.extend(problems)
        if row is not None:
            test.rows.append(row)
    test.footer = _footer(data)
    for error in _list(data.get("errors")):
        if isinstance(error, str) and error.strip():
            test.failures.append((1, error.strip()))
    test.warnings = warnings
    return Parsed(value=[test], warnings=list(warnings))


def _read_command(data: dict[str, Any], test: ParsedTest) -> None:
    args = [a for a in _list(data.get("args")) if isinstance(a, str)]
    if not args:
        return
    command = parse_command_line(shlex.join(args), 1)
    if command.program is None:
        base = args[0].rsplit("/", 1)[-1]
        command.program = base if patterns.PERF_BINARY.match(base) else None
    for item in _list(data.get("env")):
        if isinstance(item, str) and "=" in item:
            name, _, value = item.partition("=")
            command.env.setdefault(name, value)
    test.commands.append(command)
    test.program = command.program


def _params(config: dict[str, Any]) -> TestParams:
    return TestParams(
        line=1, n_thread=_int(config.get("nthreads")), n_gpus=_int(config.get("ngpus")),
        min_bytes=_int(config.get("minimum_bytes")), max_bytes=_int(config.get("maximum_bytes")),
        step_bytes=_int(config.get("step_bytes")), step_factor=_int(config.get("step_factor")),
        warmup_iters=_int(config.get("warmup_iters")), iters=_int(config.get("iterations")),
        agg_iters=_int(config.get("aggregated_iterations")),
        validation=_int(config.get("validation")), graph=_int(config.get("graph")))


def _list(value: Any) -> list[Any]:
    """A JSON array as a list; anything else (a number, an object, null) as no items."""
    return value if isinstance(value, list) else []


# More GPUs per process than any node has: a corrupt config, not a reason to build millions
# of device lines.
MAX_GPUS_PER_PROCESS = 1024


def _devices(listed: Any, params: TestParams, warnings: list[str]) -> list[DeviceLine]:
    per_process = max(1, params.n_thread or 1) * max(1, params.n_gpus or 1)
    if per_process > MAX_GPUS_PER_PROCESS:
        warnings.append(f"config: nthreads x ngpus = {per_process} GPUs per process is not "
                        f"plausible; device lines beyond the first of each process skipped")
        per_process = 1
    devices: list[DeviceLine] = []
    for entry in listed if isinstance(listed, list) else []:
        if not isinstance(entry, dict):
            continue
        rank, device = _int(entry.get("rank")), _int(entry.get("device"))
        if rank is None or device is None:
            continue
        name = entry.get("device_info")
        for i in range(per_process):
            devices.append(DeviceLine(
                line=1, rank=rank + i, group=_int(entry.get("group")), pid=_int(entry.get("pid")),
                host=str(entry.get("hostname") or "?"), device=device + i,
                pci=str(entry.get("device_hex") or "") if i == 0 else "",
                name=(name.strip() or None) if isinstance(name, str) and i == 0 else None))
    if per_process > 1 and devices:
        warnings.append(f"config: {per_process} GPUs per process but the JSON lists only the "
                        "first of each; the other ranks follow nccl-tests' rule (rank and "
                        "device + i), without their names")
    return devices


def _row(entry: Any, where: str) -> tuple[Row | None, list[str]]:
    if not isinstance(entry, dict):
        return None, [f"{where}: not an object; skipped"]
    size, count = _int(entry.get("size")), _int(entry.get("count"))
    root = _int(entry.get("root"))
    if size is None or count is None:
        return None, [f"{where}: no size/count; skipped"]
    row = Row(line=1, size_bytes=size, count=count, dtype=str(entry.get("type") or "?"),
              redop=str(entry.get("redop") or "none"), root=root, out_of_place=None,
              in_place=None)
    problems = []
    for key in ("out_of_place", "in_place"):
        placement, problem = json_placement(entry.get(key), entry.get(key + "_per_iter"),
                                            f"{where}.{key}", size)
        if problem:
            problems.append(problem)
        setattr(row, key, placement)
    if row.out_of_place is None and row.in_place is None:
        return None, problems + [f"{where}: no placement with a time; skipped"]
    return row, problems


def _footer(data: dict[str, Any]) -> Footer:
    # One block per footer object of nccl-tests' JSON (out of bounds, average busbw, bitwise),
    # each with fields of its own: the blocks' one shape is the format's, not repeated logic.
    footer = Footer()
    bounds = data.get("out_of_bounds")
    if isinstance(bounds, dict):
        footer.out_of_bounds = _int(bounds.get("count"))
        footer.out_of_bounds_status = _status(bounds.get("okay"))
        footer.out_of_bounds_line = 1
    average = data.get("average_bus_bandwidth")
    if isinstance(average, dict):
        footer.avg_busbw_text = _text(average.get("bandwidth"))
        footer.avg_busbw_gbs = _number(average.get("bandwidth"))
        footer.avg_busbw_status = _status(average.get("okay"))
        footer.avg_busbw_line = 1
    bitwise = data.get("bitwise_mismatches")
    if isinstance(bitwise, dict):
        footer.bitwise_mismatches = _int(bitwise.get("count"))
        footer.bitwise_status = _status(bitwise.get("okay"))
    return footer
