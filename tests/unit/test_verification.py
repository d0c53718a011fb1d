"""The correctness check: nccl-tests' avg tolerance, bounded chunks, the memory it counts."""

from __future__ import annotations

import pytest
import torch

from collscope.bench.runner import buffer_budget
from collscope.collectives import ops
from collscope.collectives.dtypes import DTYPES


def nccl_premulsum_avg(dtype: str, world: int, index: torch.Tensor,
                       first: int = 0) -> torch.Tensor:
    """avg as NCCL computes it on floats: each input times 1/n rounded in the dtype, then a
    running sum rounded in the dtype at every step (ReducePreMulSum), around the ring from
    rank ``first`` (each chunk of a ring all-reduce starts at a different rank)."""
    spec = DTYPES[dtype]
    tdtype = getattr(torch, spec.torch_name)
    scale = torch.tensor(1.0 / world, dtype=tdtype)
    total = None
    for step in range(world):
        rank = (first + step) % world
        x = ops._reduce_inputs("avg", rank, index, world, spec).to(tdtype) * scale
        total = x if total is None else (total + x)
    assert total is not None
    return total


@pytest.mark.parametrize("dtype", ["bfloat16", "half", "float"])
@pytest.mark.parametrize("world", [3, 5, 6, 7, 12])
def test_avg_as_nccl_rounds_it_is_not_wrong(dtype, world):
    # A relative tolerance of one epsilon (the old check) calls 512 elements wrong for half on
    # 5 ranks and float on 7, and 1024 for every dtype on 12.
    index = torch.arange(4096, dtype=torch.int64)
    expected = ops._reduce_expected("avg", index, world, DTYPES[dtype])
    for first in range(world):
        got = nccl_premulsum_avg(dtype, world, index, first)
        assert ops.mismatches(got, expected, DTYPES[dtype], "avg", world) == 0, first


def test_avg_tolerance_is_nccl_tests_formula_and_still_catches_real_errors():
    # calcSumFloatTolerance: 1 + floor(coef * n^power).
    assert ops.avg_tolerance_ulps(DTYPES["float"], 8) == 1 + int(1.25 * 8 ** 0.51)
    assert ops.avg_tolerance_ulps(DTYPES["bfloat16"], 6) == 1 + int(0.66 * 6 ** 0.91)
    assert ops.avg_tolerance_ulps(DTYPES["half"], 3) == 1 + int(0.75 * 3 ** 0.91)
    index = torch.arange(64, dtype=torch.int64)
    got = nccl_premulsum_avg("bfloat16", 3, index)
    got[5] = got[5] * 1.1      # 10% off: far beyond a few units in the last place
    expected = ops._reduce_expected("avg", index, 3, DTYPES["bfloat16"])
    assert ops.mismatches(got, expected, DTYPES["bfloat16"], "avg", 3) == 1
    # Sum stays exact: one unit off is wrong.
    exact = ops._reduce_expected("sum", index, 3, DTYPES["float"])
    bumped = exact.to(torch.float32)
    bumped[0] = torch.nextafter(bumped[0], torch.tensor(1e9))
    assert ops.mismatches(bumped, exact, DTYPES["float"], "sum", 3) == 1


def test_ulp_distance_counts_representable_values():
    one = torch.tensor([1.0], dtype=torch.bfloat16)
    two_up = torch.nextafter(torch.nextafter(one, torch.tensor([2.0], dtype=torch.bfloat16)),
                             torch.tensor([2.0], dtype=torch.bfloat16))
    assert ops.ulp_distance(two_up, torch.tensor([1.0], dtype=torch.float64)).item() == 2


@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter",
                                        "alltoall", "broadcast"])
def test_chunked_check_matches_the_whole_buffer_check(monkeypatch, collective):
    """A 1-rank group: the check over chunks of 7 elements finds what it finds in one piece."""
    import torch.distributed as dist

    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        for chunk in (7, ops.CHECK_CHUNK_ELEMENTS):
            monkeypatch.setattr(ops, "CHECK_CHUNK_ELEMENTS", chunk)
            monkeypatch.setattr(ops.chunks, "__defaults__", (chunk,))
            operation = ops.build(collective, "float", "sum", 0, 50, False, 0, 1,
                                  torch.device("cpu"))
            operation.fill_for_check()
            operation.launch()
            assert operation.count_wrong is not None
            assert operation.count_wrong() == 0
            operation.output.view(-1)[[3, 17, 49]] += 1
            assert operation.count_wrong() == 3
    finally:
        dist.destroy_process_group()


def test_size_cap_counts_the_check_working_memory():
    free = 40 * 1024**3
    assert buffer_budget(free, check=False) == int(free * 0.8) // 2
    assert buffer_budget(free, check=True) == \
        (int(free * 0.8) - ops.CHECK_WORKSPACE_BYTES) // 2
    assert buffer_budget(ops.CHECK_WORKSPACE_BYTES, check=True) == 0
    assert ops.CHECK_WORKSPACE_BYTES <= 128 * 1024**2
