"""The structure nccl-tests' ``-J`` JSON has (file version 3, ``src/util.cu`` of NVIDIA/
nccl-tests), as a checker any writer's output can be held against (``collscope bench
--nccl-json`` included): keys, nesting, value kinds, the per-iteration block of ``-I 1``."""

from __future__ import annotations

from typing import Any

TOP = ["version", "start_time", "args", "env", "nccl_version", "config", "results",
       "out_of_bounds", "average_bus_bandwidth", "errors", "end_time"]
CONFIG = ["nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "warmup_iters", "iterations",
          "aggregated_iterations", "validation", "graph", "blocking_collectives",
          "per_iter_timing", "parallel_init", "devices"]
DEVICE = ["rank", "group", "pid", "hostname", "device", "device_hex", "device_info"]
ROW = ["size", "count", "type", "redop", "root", "out_of_place", "in_place",
       "actual_iterations", "experiment_name"]
PLACEMENT = ["alg_bw", "bus_bw", "nwrong"]          # plus "time" or "cpu_time"
PER_ITER = ["skipped_iterations", "min_us", "max_us", "avg_us", "p50_us", "p95_us", "p99_us",
            "stdev_us", "cv_pct", "times_us"]        # plus per_process_max_times_us (> 1 proc)
BOOL_STRINGS = ("true", "false")


def _missing(where: str, data: Any, keys: list[str]) -> list[str]:
    if not isinstance(data, dict):
        return [f"{where}: not an object"]
    return [f"{where}: no {key!r}" for key in keys if key not in data]


def problems(doc: Any, per_iter: bool) -> list[str]:
    """Everything in ``doc`` that differs from what nccl-tests writes; [] when none does."""
    found = _missing("top level", doc, TOP)
    if found:
        return found
    if doc["version"] != 3:
        found.append(f"version {doc['version']!r}, not 3")
    config = doc["config"]
    found += _missing("config", config, CONFIG)
    if not ("step_factor" in config) ^ ("step_bytes" in config):
        found.append("config: exactly one of step_factor / step_bytes")
    for key in ("blocking_collectives", "per_iter_timing", "parallel_init"):
        if config.get(key) not in BOOL_STRINGS:
            found.append(f"config.{key}: booleans are the strings 'true'/'false'")
    for i, device in enumerate(config.get("devices") or []):
        found += _missing(f"config.devices[{i}]", device, DEVICE)
    for i, row in enumerate(doc["results"]):
        found += _missing(f"results[{i}]", row, ROW)
        if not isinstance(row, dict):
            continue
        if not isinstance(row.get("root"), str):
            found.append(f"results[{i}].root: printed as a string (%6i)")
        for place in ("out_of_place", "in_place"):
            body = row.get(place)
            if body is None and place == "out_of_place":
                continue
            found += _missing(f"results[{i}].{place}", body, PLACEMENT)
            if isinstance(body, dict) and ("time" in body) == ("cpu_time" in body):
                found.append(f"results[{i}].{place}: exactly one of time / cpu_time")
            if per_iter and body is not None:
                block = row.get(place + "_per_iter")
                found += _missing(f"results[{i}].{place}_per_iter", block, PER_ITER)
                if isinstance(block, dict):
                    times = block.get("times_us")
                    procs = block.get("per_process_max_times_us", [])
                    if not isinstance(times, list) or any(
                            not isinstance(p, list) or len(p) != len(times) for p in procs):
                        found.append(f"results[{i}].{place}_per_iter: times_us and each "
                                     "per_process_max_times_us list have one value per "
                                     "iteration")
    found += _missing("out_of_bounds", doc["out_of_bounds"], ["count", "okay"])
    found += _missing("average_bus_bandwidth", doc["average_bus_bandwidth"],
                      ["bandwidth", "okay"])
    if not isinstance(doc["errors"], list):
        found.append("errors: a list of strings")
    return found
