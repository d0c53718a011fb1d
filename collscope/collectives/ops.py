"""How to call each collective through torch.distributed, fill its inputs and check its output.

Buffers are allocated once per (collective, dtype, size, placement) and reused by every timed
iteration. The check fills inputs with rank- and index-dependent integers whose result is exact
in the dtype, runs the collective once, and counts mismatched elements against a result this
rank computes locally from the same pattern.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from collscope.collectives.dtypes import DTYPES, DtypeSpec
from collscope.collectives.table import COLLECTIVES

REDUCE_OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
              "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG}

# torch 2.13 renamed the tensor forms; older releases only have the old names.
_all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


@dataclass
class Operation:
    """One collective on its buffers: ``launch`` issues it, the rest verify it."""

    launch: Callable[[], None]
    fill_for_check: Callable[[], None]
    count_wrong: Callable[[], int] | None   # None: this placement cannot be verified
    output: torch.Tensor                    # the result buffer the check reads


def _pattern(rank: int | torch.Tensor, index: torch.Tensor, modulus: int) -> torch.Tensor:
    """Small non-negative integers that differ by rank and by index."""
    return (index + 3 * rank) % modulus


def _reduce_modulus(dtype: DtypeSpec, op: str, world: int) -> int:
    """Largest pattern modulus (<= 8) whose reduction over ``world`` ranks stays exact."""
    if op in ("min", "max"):
        return min(dtype.exact_limit, 64)
    return max(1, min(8, dtype.exact_limit // max(world, 1) + 1))


def _reduce_inputs(op: str, rank: int, index: torch.Tensor, world: int,
                   dtype: DtypeSpec) -> torch.Tensor:
    if op == "prod":
        # Exactly one rank contributes a 2 at each index, so the product is 2 and stays exact.
        return torch.where((index + rank) % world == 0, 2, 1)
    modulus = _reduce_modulus(dtype, op, world)
    if modulus < 2:
        # Too many ranks for the dtype's exact range: one rank contributes 1 per index.
        return ((index + rank) % world == 0).to(torch.int64)
    return _pattern(rank, index, modulus)


def _reduce_expected(op: str, index: torch.Tensor, world: int, dtype: DtypeSpec) -> torch.Tensor:
    """The reduction over all ranks of ``_reduce_inputs``, computed locally in float64."""
    acc = None
    for rank in range(world):
        values = _reduce_inputs(op, rank, index, world, dtype).to(torch.float64)
        if acc is None:
            acc = values
        elif op in ("sum", "avg"):
            acc = acc + values
        elif op == "prod":
            acc = acc * values
        elif op == "min":
            acc = torch.minimum(acc, values)
        else:
            acc = torch.maximum(acc, values)
    assert acc is not None
    return acc / world if op == "avg" else acc


def _mismatches(got: torch.Tensor, expected: torch.Tensor, dtype: DtypeSpec, op: str) -> int:
    got64 = got.to(torch.float64)
    if op == "avg":
        # avg divides, so the result is exact only up to the dtype's rounding.
        tolerance = expected.abs() * (torch.finfo(got.dtype).eps if dtype.floating else 0) + \
            (0 if dtype.floating else 1)
        return int(((got64 - expected).abs() > tolerance).sum().item())
    return int((got64 != expected).sum().item())


def build(collective: str, dtype_name: str, op: str, root: int, count: int, in_place: bool,
          rank: int, world: int, device: torch.device,
          group: dist.ProcessGroup | None = None) -> Operation:
    """Allocate the buffers of one collective and return how to run and verify it."""
    spec = COLLECTIVES[collective]
    dtype = DTYPES[dtype_name]
    tdtype = getattr(torch, dtype.torch_name)
    reduce_op = REDUCE_OPS.get(op, dist.ReduceOp.SUM)  # "none" for data movement

    def empty(n: int) -> torch.Tensor:
        return torch.zeros(n, dtype=tdtype, device=device)

    def arange(n: int, start: int = 0) -> torch.Tensor:
        return torch.arange(start, start + n, device=device, dtype=torch.int64)

    mod = min(dtype.exact_limit, 101)  # pattern range of data-movement collectives
    chunk = slice(rank * count, (rank + 1) * count)

    if collective == "all_reduce":
        buf = empty(count)

        def fill() -> None:
            buf.copy_(_reduce_inputs(op, rank, arange(count), world, dtype))

        return Operation(lambda: dist.all_reduce(buf, reduce_op, group=group), fill,
                         lambda: _mismatches(buf, _reduce_expected(op, arange(count), world,
                                                                   dtype), dtype, op), buf)

    if collective == "reduce":
        buf = empty(count)

        def fill() -> None:
            buf.copy_(_reduce_inputs(op, rank, arange(count), world, dtype))

        def wrong() -> int:
            if rank != root:  # only the root's buffer is defined after a reduce
                return 0
            return _mismatches(buf, _reduce_expected(op, arange(count), world, dtype), dtype, op)

        return Operation(lambda: dist.reduce(buf, root, reduce_op, group=group), fill, wrong,
                         buf)

    if collective == "broadcast":
        buf = empty(count)

        def fill() -> None:
            if rank == root:
                buf.copy_(_pattern(root, arange(count), mod))
            else:
                buf.fill_(0)

        return Operation(lambda: dist.broadcast(buf, root, group=group), fill,
                         lambda: _mismatches(buf, _pattern(root, arange(count), mod).double(),
                                             dtype, "sum"), buf)

    if collective == "all_gather":
        out = empty(count * world)
        inp = out[chunk] if in_place else empty(count)

        def fill() -> None:
            out.fill_(0)
            inp.copy_(_pattern(rank, arange(count), mod))

        def wrong() -> int:
            expected = torch.cat([_pattern(r, arange(count), mod) for r in range(world)])
            return _mismatches(out, expected.double(), dtype, "sum")

        return Operation(lambda: _all_gather(out, inp, group=group), fill, wrong, out)

    if collective == "reduce_scatter":
        inp = empty(count * world)
        out = inp[chunk] if in_place else empty(count)

        def fill() -> None:
            inp.copy_(_reduce_inputs(op, rank, arange(count * world), world, dtype))

        def wrong() -> int:
            expected = _reduce_expected(op, arange(count, rank * count), world, dtype)
            return _mismatches(out, expected, dtype, op)

        return Operation(lambda: _reduce_scatter(out, inp, reduce_op, group=group), fill, wrong,
                         out)

    if collective == "alltoall":
        inp = empty(count * world)
        out = inp if in_place else empty(count * world)

        def fill() -> None:
            out.fill_(0)
            inp.copy_(_pattern(rank, arange(count * world), mod))

        def wrong() -> int:
            # Chunk j of my output is chunk `rank` of rank j's input.
            expected = torch.cat([_pattern(j, arange(count, rank * count), mod)
                                  for j in range(world)])
            return _mismatches(out, expected.double(), dtype, "sum")

        return Operation(lambda: dist.all_to_all_single(out, inp, group=group), fill,
                         None if in_place else wrong, out)

    if collective == "sendrecv":
        send = empty(count)
        recv = send if in_place else empty(count)
        peer_to, peer_from = (rank + 1) % world, (rank - 1) % world

        def launch() -> None:
            works = dist.batch_isend_irecv([
                dist.P2POp(dist.isend, send, peer_to, group=group),
                dist.P2POp(dist.irecv, recv, peer_from, group=group),
            ])
            for work in works:
                work.wait()

        def fill() -> None:
            recv.fill_(0)
            send.copy_(_pattern(rank, arange(count), mod))

        def wrong() -> int:
            return _mismatches(recv, _pattern(peer_from, arange(count), mod).double(), dtype,
                               "sum")

        return Operation(launch, fill, None if in_place else wrong, recv)

    raise ValueError(f"no torch.distributed form for {spec.name}")
