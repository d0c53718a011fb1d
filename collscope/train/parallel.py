"""Wrapping the model for data parallelism: DDP with its knobs and comm hooks, or FSDP2.

Also reads back what each wrapper communicates per step (DDP's gradient buckets, FSDP's shard
groups), which the measurement turns into bytes and a pure-communication time.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from collscope.config_flags import HIER_CHUNK_DEFAULT
from collscope.train.analysis import POWERSGD_RANK, Bucket
from collscope.train.config import DDPKnobs
from collscope.train.model import decoder_layers

# (state, hook) as DistributedDataParallel.register_comm_hook takes them.
CommHook = tuple[Any, Callable[..., Any]]


def make_hook(name: str, world_size: int, ranks_per_node: int, device_type: str,
              hier_chunk_bytes: int = HIER_CHUNK_DEFAULT) -> CommHook | None:
    """The DDP comm hook called ``name``; None for DDP's built-in all-reduce.

    Collective for "hierarchical" (it builds the node x local-rank groups): every rank must call.
    """
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

    if name == "none":
        return None
    if name == "fp16":
        return None, default_hooks.fp16_compress_hook
    if name == "bf16":
        if device_type == "cuda":
            return None, default_hooks.bf16_compress_hook
        return None, _bf16_compress_off_nccl
    if name == "powersgd":
        # Compression from the second step (the first is DDP's bucket rebuild), so that the
        # warm-up steps reach it; the default (1000) would time plain all-reduce.
        state = powerSGD_hook.PowerSGDState(process_group=None,
                                            matrix_approximation_rank=POWERSGD_RANK,
                                            start_powerSGD_iter=2)
        if device_type == "cuda":
            return state, powerSGD_hook.powerSGD_hook
        return state, one_bucket_at_a_time(powerSGD_hook.powerSGD_hook)
    if name == "hierarchical":
        from collscope.hooks.hierarchical import HierarchicalState, hierarchical_hook

        return HierarchicalState.create(world_size, ranks_per_node, device_type,
                                        hier_chunk_bytes), \
            hierarchical_hook
    raise ValueError(f"unknown comm hook {name!r}")


def one_bucket_at_a_time(hook: Callable[..., Any]) -> Callable[..., Any]:
    """``hook`` run for one bucket after another on a single worker thread.

    PowerSGD issues three all-reduces per bucket, the later ones from callbacks of the earlier.
    On gloo those callbacks run on gloo's own threads, so with several buckets in flight the
    ranks can issue them in different orders: a collective mismatch that aborts the job.
    Finishing each bucket before starting the next, in the order DDP hands them over, keeps
    the order identical on every rank; the worker thread keeps it off backward's critical path.
    """
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="collscope-hook")

    def serial_hook(state, bucket):  # no annotations: DDP checks real types only
        future = torch.futures.Future()

        def work() -> None:
            try:
                future.set_result(hook(state, bucket).wait())
            except Exception as error:  # surfaces in DDP's backward, on the training thread
                future.set_exception(error)

        executor.submit(work)
        return future

    serial_hook.__name__ = f"{getattr(hook, '__name__', 'hook')}_one_bucket_at_a_time"
    return serial_hook


def _bf16_compress_off_nccl(state, bucket):  # no annotations: DDP checks real types only
    """torch's bf16_compress_hook, under another name: DDP refuses that name unless NCCL or
    XCCL is present (a check for old NCCL versions), but gloo reduces bfloat16 too."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    return default_hooks.bf16_compress_hook(state, bucket)


def wrap_ddp(model: torch.nn.Module, knobs: DDPKnobs, device: torch.device, world_size: int,
             ranks_per_node: int, custom_hook: CommHook | None = None,
             hier_chunk_bytes: int = HIER_CHUNK_DEFAULT) -> DistributedDataParallel:
    """DistributedDataParallel with ``knobs``; ``custom_hook`` replaces the named hook (tests,
    or a user measuring a hook of their own)."""
    ddp = DistributedDataParallel(
        model, device_ids=[device] if device.type == "cuda" else None,
        bucket_cap_mb=knobs.bucket_cap_mb, gradient_as_bucket_view=knobs.gradient_as_bucket_view,
        static_graph=knobs.static_graph)
    hook = custom_hook or make_hook(knobs.comm_hook, world_size, ranks_per_node, device.type,
                                    hier_chunk_bytes)
    if hook is not None:
        ddp.register_comm_hook(*hook)
    return ddp


def wrap_fsdp(model: torch.nn.Module) -> torch.nn.Module:
    """FSDP2: each decoder layer its own shard group, then the root (embeddings, norm, head).

    Per-layer groups let the all-gather of layer i+1 and the reduce-scatter of layer i overlap
    with compute; the root last, as fully_shard requires.
    """
    from torch.distributed.fsdp import fully_shard

    for layer in decoder_layers(model):
        fully_shard(layer)
    fully_shard(model)
    return model


def _split(text: Any) -> list[str]:
    return [part.strip() for part in str(text).split(",") if part.strip()]


def ddp_buckets(ddp: DistributedDataParallel) -> list[Bucket]:
    """The gradient buckets DDP all-reduces each step, after its first-step rebuild.

    From DDP's own logging data: bucket sizes in bytes and, per bucket, the indices of its
    parameters (in the order of module.parameters() that require grad).
    """
    data = ddp._get_ddp_logging_data()
    rebuilt = bool(data.get("has_rebuilt_buckets"))
    sizes = [int(s) for s in _split(data.get("rebuilt_bucket_sizes" if rebuilt
                                             else "bucket_sizes", ""))]
    params = [p for p in ddp.module.parameters() if p.requires_grad]
    indices = [[int(i) for i in group.split()]
               for group in _split(data.get("rebuilt_per_bucket_param_indices", ""))]
    if len(indices) != len(sizes):
        # No per-bucket layout (buckets not rebuilt): shapes unknown, sizes are still right.
        return [Bucket(size) for size in sizes]
    return [Bucket(size, tuple(tuple(params[i].shape) for i in group))
            for size, group in zip(sizes, indices)]


def fsdp_groups(model: torch.nn.Module) -> list[Bucket]:
    """What FSDP2 reduce-scatters per step: one message per shard group, of the group's
    unsharded gradient (unpadded): each decoder layer, then the root's remaining parameters."""
    layers = decoder_layers(model)
    in_layers = {id(p) for layer in layers for p in layer.parameters()}

    def group(params: list[torch.nn.Parameter]) -> Bucket:
        return Bucket(sum(p.numel() * p.element_size() for p in params),
                      tuple(tuple(p.shape) for p in params))

    groups = [group(list(layer.parameters())) for layer in reversed(layers)]
    groups.append(group([p for p in model.parameters() if id(p) not in in_layers]))
    return groups
