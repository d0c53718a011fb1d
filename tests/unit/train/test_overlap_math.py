"""`collscope overlap`: the efficiency formula, matmul sizing and its config."""

from __future__ import annotations

import pytest

from collscope.errors import UsageError
from collscope.overlap.config import OverlapConfig, dim_for_flops, parse_flops
from collscope.overlap.run import overlap_efficiency


@pytest.mark.parametrize("compute, comm, both, expected", [
    (10.0, 4.0, 10.0, 1.0),     # comm fully hidden under compute
    (10.0, 4.0, 14.0, 0.0),     # serialised
    (10.0, 4.0, 12.0, 0.5),
    (10.0, 4.0, 16.0, -0.5),    # slower together (contention)
    (3.0, 8.0, 8.0, 1.0),       # compute hidden under comm
    (0.0, 4.0, 4.0, None),
])
def test_overlap_efficiency(compute, comm, both, expected):
    assert overlap_efficiency(compute, comm, both) == expected


@pytest.mark.parametrize("text, flops", [("2e9", 2e9), ("500M", 5e8), ("1.5G", 1.5e9),
                                         ("2T", 2e12), ("100", 100.0)])
def test_parse_flops(text, flops):
    assert parse_flops(text) == flops


@pytest.mark.parametrize("text", ["lots", "-1G", "0", "G"])
def test_bad_flops_name_the_flag(text):
    with pytest.raises(UsageError, match="^--flops: "):
        parse_flops(text)


def test_dim_for_flops_is_the_cube_root_of_half():
    assert dim_for_flops(2e6) == 100
    assert dim_for_flops(2 * 8192**3) == 8192


def test_defaults_follow_the_device_and_messages_are_whole_floats():
    assert OverlapConfig().resolved(on_gpu=False) == (512, 4 * 1024**2, "float32")
    assert OverlapConfig().resolved(on_gpu=True) == (8192, 256 * 1024**2, "bfloat16")
    assert OverlapConfig(flops=2e6, size_bytes=1026).resolved(False) == (100, 1024, "float32")


@pytest.mark.parametrize("kwargs, flag", [
    ({"matmul_dim": 8, "flops": 1e9}, "--matmul-dim/--flops"),
    ({"matmul_dim": 0}, "--matmul-dim"),
    ({"size_bytes": 2}, "-b/--bytes"),
    ({"iters": 0}, "--iters"),
    ({"warmup": -1}, "--warmup"),
    ({"dtype": "int8"}, "--dtype"),
])
def test_bad_config_names_the_flag(kwargs, flag):
    with pytest.raises(UsageError) as error:
        OverlapConfig(**kwargs)
    assert str(error.value).startswith(flag)
