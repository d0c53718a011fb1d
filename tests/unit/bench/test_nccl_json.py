"""bench --nccl-json: the structure NVIDIA/nccl-tests src/util.cu writes (file version 3)."""

from __future__ import annotations

import json

import msgspec
import pytest

from collscope.bench.config import BenchConfig
from collscope.bench.nccl_json import document, dumps, nccl_version_code, open_new, write
from collscope.records.bench import BenchResult

# Keys in the order util.cu writes them (jsonOutputInit, writeDeviceReport, writeResultHeader,
# writeBenchmarkLinePreamble/Body/PerIterReport/Terminator, writeResultFooter, writeErrors,
# jsonOutputFinalize), -I 1 per-iteration blocks included.
TOP = ["version", "start_time", "args", "env", "nccl_version", "config", "results",
       "out_of_bounds", "average_bus_bandwidth", "errors", "end_time"]
CONFIG = ["nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor", "warmup_iters",
          "iterations", "aggregated_iterations", "validation", "graph", "blocking_collectives",
          "per_iter_timing", "per_iter_skip", "parallel_init", "devices"]
DEVICE = ["rank", "group", "pid", "hostname", "device", "device_hex", "device_info"]
RESULT = ["size", "count", "type", "redop", "root", "out_of_place", "out_of_place_per_iter",
          "in_place", "in_place_per_iter", "actual_iterations", "experiment_name"]
PLACEMENT = ["time", "alg_bw", "bus_bw", "nwrong"]
PER_ITER = ["skipped_iterations", "min_us", "max_us", "avg_us", "p50_us", "p95_us", "p99_us",
            "stdev_us", "cv_pct", "times_us", "per_process_max_times_us"]


def _result(in_place: bool, size: int, times: list[list[float]]) -> BenchResult:
    return BenchResult(collective="all_gather", size_bytes=size, count=size // 4 // 2,
                       dtype="float", op="none", root=-1, in_place=in_place, world_size=2,
                       iters=3, time_us=12.5, time_us_p50=12.0, time_us_p95=13.0,
                       time_us_min=11.0, time_us_max=14.0, algbw_gbs=0.5, busbw_gbs=0.25,
                       wrong=0, rank_times_us=times, rank_op_us=times)


DEVICES = [{"rank": r, "pid": 100 + r, "host": "node0", "device": r, "device_type": "cuda",
            "name": "AMD Instinct MI300X"} for r in range(2)]


def _doc() -> dict:
    times = [[10.0, 20.0, 30.0], [15.0, 5.0, 40.0]]
    results = [_result(False, 1024, times), _result(True, 1024, times)]
    return document(results, BenchConfig(collectives=["all_gather"], min_bytes=1024,
                                         max_bytes=1024, iters=3),
                    DEVICES, ["collscope", "bench"], {"NCCL_DEBUG": "INFO"}, "2.27.3",
                    0.0, 1.0)


def test_keys_and_nesting_follow_util_cu():
    doc = json.loads(dumps(_doc()))
    assert list(doc) == [*TOP, "collscope_args"] and doc["version"] == 3   # one key of ours
    assert list(doc["config"]) == CONFIG
    assert [list(d) for d in doc["config"]["devices"]] == [DEVICE, DEVICE]
    (entry,) = doc["results"]
    assert list(entry) == RESULT
    assert list(entry["out_of_place"]) == PLACEMENT == list(entry["in_place"])
    assert list(entry["in_place_per_iter"]) == PER_ITER
    assert list(doc["out_of_bounds"]) == ["count", "okay"]
    assert list(doc["average_bus_bandwidth"]) == ["bandwidth", "okay"]


def test_values_have_util_cu_types_and_quirks():
    doc = json.loads(dumps(_doc()))
    assert doc["nccl_version"] == 22703 and doc["env"] == ["NCCL_DEBUG=INFO"]
    config = doc["config"]
    assert config["per_iter_timing"] == "true" and config["blocking_collectives"] == "false"
    (entry,) = doc["results"]
    assert entry["root"] == "    -1" and entry["redop"] == "none"
    assert entry["in_place"]["nwrong"] == 0.0 and entry["experiment_name"] == ""
    per_iter = entry["in_place_per_iter"]
    # times_us: per iteration the max over the process rows; those rows as written.
    assert per_iter["times_us"] == [15.0, 20.0, 40.0]
    assert per_iter["per_process_max_times_us"] == [[10.0, 20.0, 30.0], [15.0, 5.0, 40.0]]
    assert per_iter["min_us"] == 15.0 and per_iter["max_us"] == 40.0
    assert per_iter["p50_us"] == 20.0 and per_iter["avg_us"] == pytest.approx(25.0)
    assert per_iter["stdev_us"] == pytest.approx((((10**2) + 5**2 + 15**2) / 3) ** 0.5)
    assert doc["out_of_bounds"] == {"count": 0, "okay": "true"}
    assert doc["average_bus_bandwidth"]["okay"] == "unchecked"


def test_in_place_only_collectives_write_a_null_out_of_place():
    times = [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    doc = document([_result(True, 64, times)], BenchConfig(), DEVICES, [], {}, None, 0.0, 0.0)
    (entry,) = doc["results"]
    assert entry["out_of_place"] is None and "out_of_place_per_iter" not in entry
    assert doc["nccl_version"] == 0


def test_dumps_prints_doubles_as_lf_and_nan_as_string():
    assert dumps({"a": 1.5, "b": float("nan"), "c": [1, None], "d": 'x/"y'}) == \
        '{"a":1.500000,"b":"nan","c":[1,null],"d":"x\\/\\"y"}'


@pytest.mark.parametrize("version,code", [("2.27.3", 22703), ("2.18.1", 21801), (None, 0),
                                          ("garbage", 0)])
def test_nccl_version_code(version, code):
    assert nccl_version_code(version) == code


def test_never_overwrites_like_nccl_tests(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("keep")
    first = write(str(target), {"version": 3})
    second = write(str(target), {"version": 3})
    assert (first, second) == (f"{target}.0", f"{target}.1")
    assert target.read_text() == "keep"
    handle, path = open_new(str(tmp_path / "fresh.json"))
    handle.close()
    assert path.endswith("fresh.json")


def test_args_are_the_nccl_tests_binarys_and_collscope_args_the_real_command():
    doc = json.loads(dumps(_doc()))
    # args[0] is the one place a reader (nccl-tests' own, collscope import) finds the collective.
    assert doc["args"] == ["all_gather_perf", "-b", "1024", "-e", "1024", "-f", "2", "-n", "3",
                           "-w", "5", "-c", "1", "-z", "0", "-a", "1", "-I", "1", "-d", "float"]
    assert doc["collscope_args"] == ["collscope", "bench"]
    reduce = [msgspec.structs.replace(_result(True, 64, []), collective="reduce", op="max", root=1)]
    config = BenchConfig(collectives=["reduce"], min_bytes=64, step_bytes=64, root=1, check=0)
    args = document(reduce, config, DEVICES, ["collscope"], {}, None, 0.0, 1.0)["args"]
    assert args[:7] == ["reduce_perf", "-b", "64", "-e", "64", "-i", "64"]
    assert args[-6:] == ["-d", "float", "-o", "max", "-r", "1"]
    assert args[args.index("-c") + 1] == "0"
