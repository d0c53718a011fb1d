"""How to call each collective through torch.distributed, fill its inputs and check its output.

Buffers are allocated once per (collective, dtype, size, placement) and reused by every timed
iteration. The check fills inputs with rank- and index-dependent integers whose result is exact
in the dtype, runs the collective once, and counts mismatched elements against a result this
rank computes locally from the same pattern.

The check works in bounded chunks of CHECK_CHUNK_ELEMENTS elements (index, expected values
and comparison for one chunk at a time), so its working memory is CHECK_WORKSPACE_BYTES
whatever the message size: a full-size float64 copy of an 8 GiB message would not fit beside
the buffers on the device.

avg on floating types follows nccl-tests (verifiable.cu): NCCL computes it as a premultiplied
sum, rounding at every step, so results are compared by their distance in units in the last
place (the integer difference of the bit patterns) against calcSumFloatTolerance(n ranks,
dtype) = 1 + floor(coef x n^power), with (coef, power) = (1.25, 0.51) for float and double,
(0.75, 0.91) for half and (0.66, 0.91) for bfloat16. Every other op is compared exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist

from collscope.collectives.dtypes import DTYPES, DtypeSpec
from collscope.collectives.table import COLLECTIVES
from collscope.collectives.torch_api import all_gather_tensor as _all_gather
from collscope.collectives.torch_api import reduce_scatter_tensor as _reduce_scatter

REDUCE_OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
              "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG}

# 2 Mi elements per chunk; per element the check holds an int64 index, a float64 expected
# value, one float64 per-rank input being reduced, the float64 copy of the result and a bool:
# at most 40 bytes, so 80 MiB of working memory on the device (counted in the size cap).
CHECK_CHUNK_ELEMENTS = 1 << 21
CHECK_BYTES_PER_ELEMENT = 40
CHECK_WORKSPACE_BYTES = CHECK_CHUNK_ELEMENTS * CHECK_BYTES_PER_ELEMENT
# nccl-tests' calcSumFloatTolerance parameters: dtype -> (coef, power).
AVG_TOLERANCE = {"float": (1.25, 0.51), "double": (1.25, 0.51), "half": (0.75, 0.91),
                 "bfloat16": (0.66, 0.91)}
_BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}


@dataclass
class Operation:
    """One collective on its buffers: ``launch`` issues it, the rest verify it."""

    launch: Callable[[], None]
    fill_for_check: Callable[[], None]
    count_wrong: Callable[[], int] | None   # None: this placement cannot be verified
    output: torch.Tensor                    # the result buffer the check reads


def chunks(n: int, size: int = CHECK_CHUNK_ELEMENTS) -> Iterator[tuple[int, int]]:
    """(offset, length) pieces covering 0..n."""
    for offset in range(0, n, size):
        yield offset, min(size, n - offset)


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


def avg_tolerance_ulps(dtype: DtypeSpec, world: int) -> int:
    """nccl-tests' calcSumFloatTolerance: how many units in the last place avg may be off."""
    coef, power = AVG_TOLERANCE[dtype.name]
    return 1 + int(coef * float(world) ** power)


def ulp_distance(got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """|bits(got) - bits(expected rounded to got's dtype)|: units in the last place apart.

    The bit patterns of floats of one sign are ordered like the floats, so their integer
    difference counts the representable values between them (the check's values are >= 0).
    """
    bits = _BITS[got.element_size()]
    ours = got.contiguous().view(bits).to(torch.int64)
    theirs = expected.to(got.dtype).contiguous().view(bits).to(torch.int64)
    return (ours - theirs).abs()


def mismatches(got: torch.Tensor, expected: torch.Tensor, dtype: DtypeSpec, op: str,
               world: int) -> int:
    """Elements of ``got`` that differ from ``expected`` (float64) beyond the op's tolerance."""
    if op == "avg" and dtype.floating:
        return int((ulp_distance(got, expected) > avg_tolerance_ulps(dtype, world)).sum().item())
    if op == "avg":  # integer division rounds: within 1 of the exact quotient
        return int(((got.to(torch.float64) - expected).abs() > 1).sum().item())
    return int((got.to(torch.float64) != expected).sum().item())


def _fill(buf: torch.Tensor, values_at: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """buf[i] = values_at(i), one bounded chunk at a time."""
    flat = buf.view(-1)
    for offset, length in chunks(flat.numel()):
        index = torch.arange(offset, offset + length, device=buf.device, dtype=torch.int64)
        flat[offset:offset + length].copy_(values_at(index))


def _count(buf: torch.Tensor, expected_at: Callable[[torch.Tensor], torch.Tensor],
           dtype: DtypeSpec, op: str, world: int) -> int:
    """Mismatches of buf[i] against expected_at(i) (float64), one bounded chunk at a time."""
    flat = buf.view(-1)
    wrong = 0
    for offset, length in chunks(flat.numel()):
        index = torch.arange(offset, offset + length, device=buf.device, dtype=torch.int64)
        wrong += mismatches(flat[offset:offset + length], expected_at(index).to(torch.float64),
                            dtype, op, world)
    return wrong


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

    def inputs(r: int, start: int = 0) -> Callable[[torch.Tensor], torch.Tensor]:
        return lambda i: _reduce_inputs(op, r, i + start, world, dtype)

    def reduced(start: int = 0) -> Callable[[torch.Tensor], torch.Tensor]:
        return lambda i: _reduce_expected(op, i + start, world, dtype)

    def count_wrong(buf: torch.Tensor, expected_at: Callable[[torch.Tensor], torch.Tensor],
                    how: str = "sum") -> Callable[[], int]:
        return lambda: _count(buf, expected_at, dtype, how, world)

    mod = min(dtype.exact_limit, 101)  # pattern range of data-movement collectives
    chunk = slice(rank * count, (rank + 1) * count)

    if collective == "all_reduce":
        buf = empty(count)
        return Operation(lambda: dist.all_reduce(buf, reduce_op, group=group),
                         lambda: _fill(buf, inputs(rank)), count_wrong(buf, reduced(), op), buf)

    if collective == "reduce":
        buf = empty(count)
        check = count_wrong(buf, reduced(), op)
        # Only the root's buffer is defined after a reduce.
        return Operation(lambda: dist.reduce(buf, root, reduce_op, group=group),
                         lambda: _fill(buf, inputs(rank)),
                         lambda: check() if rank == root else 0, buf)

    if collective == "broadcast":
        buf = empty(count)

        def fill_broadcast() -> None:
            if rank == root:
                _fill(buf, lambda i: _pattern(root, i, mod))
            else:
                buf.fill_(0)

        return Operation(lambda: dist.broadcast(buf, root, group=group), fill_broadcast,
                         count_wrong(buf, lambda i: _pattern(root, i, mod)), buf)

    if collective == "all_gather":
        out = empty(count * world)
        inp = out[chunk] if in_place else empty(count)

        def fill_gather() -> None:
            out.fill_(0)
            _fill(inp, lambda i: _pattern(rank, i, mod))

        # Element i of the output is element i % count of rank i // count's input.
        return Operation(lambda: _all_gather(out, inp, group=group), fill_gather,
                         count_wrong(out, lambda i: _pattern(i // count, i % count, mod)), out)

    if collective == "reduce_scatter":
        inp = empty(count * world)
        out = inp[chunk] if in_place else empty(count)
        return Operation(lambda: _reduce_scatter(out, inp, reduce_op, group=group),
                         lambda: _fill(inp, inputs(rank)),
                         count_wrong(out, reduced(rank * count), op), out)

    if collective == "alltoall":
        inp = empty(count * world)
        out = inp if in_place else empty(count * world)

        def fill_alltoall() -> None:
            out.fill_(0)
            _fill(inp, lambda i: _pattern(rank, i, mod))

        # Chunk j of my output is chunk `rank` of rank j's input.
        return Operation(lambda: dist.all_to_all_single(out, inp, group=group), fill_alltoall,
                         None if in_place else count_wrong(
                             out, lambda i: _pattern(i // count, rank * count + i % count, mod)),
                         out)

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

        def fill_sendrecv() -> None:
            recv.fill_(0)
            _fill(send, lambda i: _pattern(rank, i, mod))

        return Operation(launch, fill_sendrecv, None if in_place else count_wrong(
            recv, lambda i: _pattern(peer_from, i, mod)), recv)

    raise ValueError(f"no torch.distributed form for {spec.name}")
