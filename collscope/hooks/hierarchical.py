"""Hierarchical all-reduce, pipelined: the message in chunks, each reduce-scattered inside the
node, all-reduced across nodes, all-gathered inside the node, with the stages of neighbouring
chunks running at the same time.

With N nodes of R ranks (n = N x R) and S bytes, a flat ring carries 2(n-1)/n x S across each
node boundary per direction; here each of the R ranks of a node sends 2(N-1)/N x S/R across, so
a node sends 2(N-1)/N x S. For 2 x 2 that is 1.5 S against S: 1.5x less inter-node traffic,
paid for with two extra intra-node steps on the faster local links.

Unpipelined, those two steps add to the inter-node time. Here, while the inter-node all-reduce
of chunk i runs (on the "node" group), the reduce-scatter of chunk i+1 and the all-gather of
chunk i-1 run on the "local" group: separate process groups progress independently (gloo: each
group its own worker threads and connections; NCCL/RCCL: each group its own communicator and
stream). Only the first chunk's reduce-scatter and the last one's all-gather stay exposed, so
the time tends to the inter-node all-reduce alone as chunks get smaller, until the fixed cost
per collective takes over (the chunk's default is measured, see docs/bench.md).

Every collective is issued asynchronously and ordered by ``work.wait()`` alone: on gloo that
blocks the calling thread until the work is done; on NCCL/RCCL it makes the current stream
wait for the work's stream, with no host synchronisation. The issue order is the same fixed
sequence on every rank, which both backends need to match collectives (and which keeps
concurrent NCCL communicators on one device from deadlocking).

Groups come from torch's DeviceMesh (nodes x ranks per node), which assumes node-major ranks
(rank = node x R + local rank), as torchrun, srun and mpirun assign them.
"""

# No `from __future__ import annotations` here: DDP checks the hook's annotations at runtime
# (the bucket must be annotated with the real dist.GradBucket, not a string).
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

from collscope.collectives.torch_api import all_gather_tensor as _all_gather
from collscope.collectives.torch_api import reduce_scatter_tensor as _reduce_scatter
from collscope.config_flags import HIER_CHUNK_DEFAULT
from collscope.errors import UsageError

_OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.SUM, "min": dist.ReduceOp.MIN,
        "max": dist.ReduceOp.MAX, "prod": dist.ReduceOp.PRODUCT}


def build_mesh(world_size: int, ranks_per_node: int, device_type: str) -> DeviceMesh:
    """A (nodes, ranks per node) DeviceMesh; collective: every rank must call it."""
    if ranks_per_node < 1 or world_size % ranks_per_node:
        raise UsageError(f"--ranks-per-node: {ranks_per_node} does not divide the world size "
                         f"{world_size}; use a divisor of it (the ranks on one node)")
    return init_device_mesh(device_type, (world_size // ranks_per_node, ranks_per_node),
                            mesh_dim_names=("node", "local"))


def chunk_bounds(numel: int, ranks_per_node: int, chunk_numel: int) -> list[tuple[int, int]]:
    """(start, length) of each pipeline chunk of a ``numel``-element message.

    The fewest chunks of at most ``chunk_numel`` elements (at least ``ranks_per_node``), all
    but the last of one length, a multiple of ``ranks_per_node`` (so that they split evenly
    over the node's ranks), the smallest such length for that count (so that the last chunk is
    as long as it can be).
    """
    r = ranks_per_node
    largest = max(r, chunk_numel // r * r)
    count = math.ceil(numel / largest)
    if count == 0:
        return []
    step = math.ceil(math.ceil(numel / count) / r) * r
    return [(start, min(step, numel - start)) for start in range(0, numel, step)]


class HierarchicalAllReduce:
    """In-place pipelined hierarchical all-reduce of tensors of one size; buffers made once."""

    def __init__(self, mesh: DeviceMesh, numel: int, dtype: torch.dtype, device: torch.device,
                 chunk_bytes: int = HIER_CHUNK_DEFAULT):
        self.local = mesh.get_group("local")
        self.inter = mesh.get_group("node")
        r = mesh.size(1)
        self.world = mesh.size()
        self.numel = numel
        self.chunks = chunk_bounds(numel, r, chunk_bytes // dtype.itemsize)
        # Each rank's share of every chunk, side by side (numel / R elements in all).
        widths = [math.ceil(length / r) for _, length in self.chunks]
        shards = torch.empty(sum(widths), dtype=dtype, device=device)
        self.shards = list(shards.split(widths))
        # Only the last chunk can fail to split evenly over the node: it goes through a
        # zero-padded copy.
        tail = self.chunks[-1][1] if self.chunks else 0
        self.padded = torch.zeros(widths[-1] * r, dtype=dtype, device=device) \
            if tail % r else None

    def __call__(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        if op not in _OPS:
            raise UsageError(f"-o/--op: hierarchical all-reduce supports {', '.join(_OPS)}")
        flat = tensor.view(-1)
        parts = [flat[start:start + length] for start, length in self.chunks]
        if self.padded is not None:
            self.padded[: parts[-1].numel()].copy_(parts[-1])
            parts[-1] = self.padded
        reduce_op, count = _OPS[op], len(parts)

        def scatter(i: int) -> dist.Work:
            return _reduce_scatter(self.shards[i], parts[i], reduce_op, group=self.local,
                                   async_op=True)

        scattered = [scatter(0)] if count else []
        across: list[dist.Work] = []
        gathered: list[dist.Work] = []
        # Step i: chunk i goes across as soon as its reduce-scatter is done, chunk i+1's
        # reduce-scatter is queued behind it, and chunk i-1 is gathered once it is back.
        for i in range(count + 1):
            if i < count:
                scattered[i].wait()
                across.append(dist.all_reduce(self.shards[i], reduce_op, group=self.inter,
                                              async_op=True))
                if i + 1 < count:
                    scattered.append(scatter(i + 1))
            if i > 0:
                across[i - 1].wait()
                if op == "avg":  # on the shard: 1/R of the elements, inside the pipeline
                    self.shards[i - 1].div_(self.world)
                gathered.append(_all_gather(parts[i - 1], self.shards[i - 1],
                                            group=self.local, async_op=True))
        for work in gathered:
            work.wait()
        if self.padded is not None:
            start, length = self.chunks[-1]
            flat[start:].copy_(self.padded[:length])
        return tensor


def hierarchical_all_reduce(tensor: torch.Tensor, mesh: DeviceMesh, op: str = "sum",
                            chunk_bytes: int = HIER_CHUNK_DEFAULT) -> torch.Tensor:
    """All-reduce ``tensor`` in place over the mesh's ranks, hierarchically."""
    return HierarchicalAllReduce(mesh, tensor.numel(), tensor.dtype, tensor.device,
                                 chunk_bytes)(tensor, op)


@dataclass
class HierarchicalState:
    """State of the DDP comm hook: the mesh, the chunk size, and where the collectives are issued.

    On GPUs they are issued inline from the hook, on a side stream that first waits for the
    bucket's gradients: ``work.wait()`` in the pipeline then holds back that side stream only,
    not the stream backward runs on, and the returned future's CUDA event (taken on the side
    stream) is what DDP waits for. gloo runs collectives to completion on the calling thread's
    waits, so on CPU they go to a single worker thread (one thread keeps the bucket order
    identical on every rank) and the hook returns at once, letting backward continue as with
    DDP's own hook.
    """

    mesh: DeviceMesh
    chunk_bytes: int = HIER_CHUNK_DEFAULT
    _reducers: dict[tuple[int, torch.dtype], HierarchicalAllReduce] = field(default_factory=dict)
    _executor: ThreadPoolExecutor | None = None
    _streams: dict[torch.device, torch.cuda.Stream] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def create(cls, world_size: int, ranks_per_node: int, device_type: str,
               chunk_bytes: int = HIER_CHUNK_DEFAULT) -> "HierarchicalState":
        return cls(build_mesh(world_size, ranks_per_node, device_type), chunk_bytes)

    def reducer(self, tensor: torch.Tensor) -> HierarchicalAllReduce:
        key = (tensor.numel(), tensor.dtype)
        with self._lock:
            if key not in self._reducers:
                self._reducers[key] = HierarchicalAllReduce(
                    self.mesh, tensor.numel(), tensor.dtype, tensor.device, self.chunk_bytes)
            return self._reducers[key]

    def executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="collscope-hier")
        return self._executor

    def stream(self, device: torch.device) -> torch.cuda.Stream:
        if device not in self._streams:
            self._streams[device] = torch.cuda.Stream(device)
        return self._streams[device]


def hierarchical_hook(state: HierarchicalState,
                      bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: averaged gradients through the pipelined hierarchical all-reduce.

    Register with ``model.register_comm_hook(HierarchicalState.create(...), hierarchical_hook)``.
    """
    tensor = bucket.buffer()
    if tensor.is_cuda:
        side = state.stream(tensor.device)
        side.wait_stream(torch.cuda.current_stream(tensor.device))
        with torch.cuda.stream(side):
            state.reducer(tensor)(tensor, "avg")
            # A future on the device records an event on the current (side) stream when its
            # result is set; DDP's wait on it makes its own stream wait for that event.
            done: torch.futures.Future[torch.Tensor] = torch.futures.Future(
                devices=[tensor.device])
            done.set_result(tensor)
        return done
    reducer = state.reducer(tensor)
    future: torch.futures.Future[torch.Tensor] = torch.futures.Future()

    def work() -> None:
        try:
            future.set_result(reducer(tensor, "avg"))
        except Exception as error:  # surfaces in DDP's backward, on the training thread
            future.set_exception(error)  # type: ignore[arg-type]  # torch's stub is too narrow

    state.executor().submit(work)
    return future
