"""Hierarchical all-reduce: reduce-scatter inside each node, all-reduce across nodes, all-gather
inside each node.

With N nodes of R ranks (n = N x R) and S bytes, a flat ring carries 2(n-1)/n x S across each
node boundary per direction; here each of the R ranks of a node sends 2(N-1)/N x S/R across, so
a node sends 2(N-1)/N x S. For 2 x 2 that is 1.5 S against S: 1.5x less inter-node traffic,
paid for with two extra intra-node steps on the faster local links.

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


class HierarchicalAllReduce:
    """In-place hierarchical all-reduce of tensors of one size, buffers allocated once."""

    def __init__(self, mesh: DeviceMesh, numel: int, dtype: torch.dtype, device: torch.device):
        self.local = mesh.get_group("local")
        self.inter = mesh.get_group("node")
        self.ranks_per_node = mesh.size(1)
        self.world = mesh.size()
        self.numel = numel
        chunk = math.ceil(numel / self.ranks_per_node)
        padded = chunk * self.ranks_per_node
        # Sizes that do not split evenly over the node go through a zero-padded copy.
        self.padded = torch.zeros(padded, dtype=dtype, device=device) \
            if padded != numel else None
        self.part = torch.empty(chunk, dtype=dtype, device=device)

    def __call__(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        if op not in _OPS:
            raise UsageError(f"-o/--op: hierarchical all-reduce supports {', '.join(_OPS)}")
        flat = tensor.view(-1)
        buf = flat
        if self.padded is not None:
            buf = self.padded
            buf[: self.numel].copy_(flat)
        reduce_op = _OPS[op]
        _reduce_scatter(self.part, buf, reduce_op, group=self.local)
        dist.all_reduce(self.part, reduce_op, group=self.inter)
        _all_gather(buf, self.part, group=self.local)
        if buf is not flat:
            flat.copy_(buf[: self.numel])
        if op == "avg":
            flat.div_(self.world)
        return tensor


def hierarchical_all_reduce(tensor: torch.Tensor, mesh: DeviceMesh,
                            op: str = "sum") -> torch.Tensor:
    """All-reduce ``tensor`` in place over the mesh's ranks, hierarchically."""
    return HierarchicalAllReduce(mesh, tensor.numel(), tensor.dtype, tensor.device)(tensor, op)


@dataclass
class HierarchicalState:
    """State of the DDP comm hook: the mesh, and on CPU one worker thread for the collectives.

    On GPUs the collectives are enqueued on the communicator's stream, so issuing them inline
    from the hook already overlaps with backward. gloo runs them on the calling thread, so on CPU
    they go to a single worker thread (one thread keeps the bucket order identical on every
    rank) and the hook returns at once, letting backward continue as with DDP's own hook.
    """

    mesh: DeviceMesh
    _reducers: dict[tuple[int, torch.dtype], HierarchicalAllReduce] = field(default_factory=dict)
    _executor: ThreadPoolExecutor | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def create(cls, world_size: int, ranks_per_node: int, device_type: str,
               ) -> "HierarchicalState":
        return cls(build_mesh(world_size, ranks_per_node, device_type))

    def reducer(self, tensor: torch.Tensor) -> HierarchicalAllReduce:
        key = (tensor.numel(), tensor.dtype)
        with self._lock:
            if key not in self._reducers:
                self._reducers[key] = HierarchicalAllReduce(self.mesh, tensor.numel(),
                                                            tensor.dtype, tensor.device)
            return self._reducers[key]

    def executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="collscope-hier")
        return self._executor


def hierarchical_hook(state: HierarchicalState,
                      bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: averaged gradients through the hierarchical all-reduce.

    Register with ``model.register_comm_hook(HierarchicalState.create(...), hierarchical_hook)``.
    """
    tensor = bucket.buffer()
    reducer = state.reducer(tensor)
    future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    if tensor.is_cuda:
        reducer(tensor, "avg")
        future.set_result(tensor)
        return future

    def work() -> None:
        try:
            future.set_result(reducer(tensor, "avg"))
        except Exception as error:  # surfaces in DDP's backward, on the training thread
            future.set_exception(error)  # type: ignore[arg-type]  # torch's stub is too narrow

    state.executor().submit(work)
    return future
