import pytest

from collscope.bench.config import BenchConfig
from collscope.errors import UsageError


def test_defaults():
    config = BenchConfig()
    assert config.collectives == ["all_reduce"]
    assert (config.iters, config.warmup_iters, config.average_name) == (20, 5, "mean")
    assert config.sizes(64) == [8, 16, 32, 64]


def test_all_expands_in_table_order():
    config = BenchConfig(collectives=["all"], dtypes=["all"], ops=["all"])
    assert config.collectives == ["all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                  "reduce", "alltoall", "sendrecv"]
    assert "bfloat16" in config.dtypes and config.ops == ["sum", "prod", "min", "max", "avg"]


def test_aliases():
    config = BenchConfig(collectives=["allreduce", "all_gather_perf"], dtypes=["fp16", "int"])
    assert config.collectives == ["all_reduce", "all_gather"]
    assert config.dtypes == ["half", "int32"]


def test_linear_steps():
    assert BenchConfig(min_bytes=100, max_bytes=400, step_bytes=100).sizes(400) == \
        [100, 200, 300, 400]


@pytest.mark.parametrize("kwargs, flag", [
    ({"collectives": ["allgatherv"]}, "COLLECTIVE"),
    ({"dtypes": ["float8"]}, "-d/--dtype"),
    ({"ops": ["xor"]}, "--op"),
    ({"min_bytes": 1024, "max_bytes": 8}, "-b/--min-bytes"),
    ({"iters": 0}, "-n/--iters"),
    ({"iters": -3}, "-n/--iters"),
    ({"warmup_iters": -1}, "-w/--warmup-iters"),
    ({"step_factor": 1}, "-f/--step-factor"),
    ({"average": 7}, "-a/--average"),
    ({"root": -1}, "-r/--root"),
    ({"target_precision": 0.0}, "--target-precision"),
    ({"timeout_s": 0}, "--timeout"),
    ({"hier_chunk_bytes": 0}, "--hier-chunk"),
    ({"in_place": False, "out_of_place": False}, "--in-place"),
    ({"in_place": False, "collectives": ["all_reduce"]}, "--out-of-place"),
])
def test_bad_input_names_the_flag(kwargs, flag):
    with pytest.raises(UsageError) as error:
        BenchConfig(**kwargs)
    assert str(error.value).startswith(flag)


def test_unknown_collective_lists_accepted():
    with pytest.raises(UsageError, match="accepted: all_reduce, all_gather"):
        BenchConfig(collectives=["nope"])


def test_job_checks():
    with pytest.raises(UsageError, match="-r/--root: 4 is not a rank"):
        BenchConfig(root=4).validate_for_job(4, "gloo")
    with pytest.raises(UsageError, match="avg on gloo"):
        BenchConfig(ops=["avg"], dtypes=["int32"]).validate_for_job(2, "gloo")
    BenchConfig(ops=["avg"], dtypes=["float"]).validate_for_job(2, "gloo")
    BenchConfig(ops=["avg"], dtypes=["int32"]).validate_for_job(2, "nccl")
