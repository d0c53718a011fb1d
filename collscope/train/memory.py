"""Memory pre-flight of `collscope train`: what one rank will need, before the model exists.

Per rank, for the model shape (ModelSpec), the dtype, the parallelism and the ranks:

- weights, gradients and AdamW's two states (exp_avg, exp_avg_sq), all in the model's dtype;
  with FSDP each is 1/N of the model, plus the largest layer unsharded twice (the all-gather
  of the layer being computed and of the next, prefetched) for weights and for gradients;
- DDP's gradient buckets: a second copy of the gradients, unless gradient_as_bucket_view;
- AdamW foreach's temporaries: one more copy of the (local) parameters at its peak;
- activations kept for backward, per decoder layer and token: the normalised inputs, q, k, v
  and their rotated forms, the attention output, and the MLP's gate, up, activation and
  product (7 hidden + 3 key/value + 4 intermediate values), plus attention probabilities
  (heads x seq) where sdpa falls back to the math kernel (CPU); then the logits in the
  model's dtype and their float32 upcast, log-softmax and gradient (4 + 12 bytes per token
  and vocabulary entry);
- on CPU the rank's process itself (Python, torch, transformers: its resident memory now),
  since the measured peak there is the process's high-water mark.

Pure arithmetic (no torch): the estimate is compared with the measured peak in every run
(README table), so users can see how far to trust it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from collscope.errors import UsageError
from collscope.train.config import PRESETS, ModelSpec, TrainConfig
from collscope.units import format_size

DTYPE_BYTES = {"float32": 4, "bfloat16": 2}


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes one rank needs, by part."""

    weights: int
    gradients: int
    optimizer: int
    buckets: int
    activations: int
    process: int

    @property
    def total(self) -> int:
        return (self.weights + self.gradients + self.optimizer + self.buckets +
                self.activations + self.process)

    def parts(self) -> str:
        named = (("weights", self.weights), ("gradients", self.gradients),
                 ("optimizer", self.optimizer), ("DDP buckets", self.buckets),
                 ("activations", self.activations), ("process", self.process))
        return ", ".join(f"{name} {format_size(value)}" for name, value in named if value)


def layer_parameters(spec: ModelSpec) -> int:
    head_dim = spec.hidden // spec.heads
    kv = (spec.kv_heads or spec.heads) * head_dim
    return 2 * spec.hidden * spec.hidden + 2 * spec.hidden * kv + \
        3 * spec.hidden * spec.intermediate + 2 * spec.hidden


def activation_bytes(spec: ModelSpec, dtype_bytes: int, on_gpu: bool) -> int:
    tokens = spec.seq_len * spec.batch_size
    kv = (spec.kv_heads or spec.heads) * (spec.hidden // spec.heads)
    per_layer = tokens * (7 * spec.hidden + 3 * kv + 4 * spec.intermediate) * dtype_bytes
    if not on_gpu:  # sdpa's math path keeps the attention probabilities
        per_layer += spec.batch_size * spec.heads * spec.seq_len * spec.seq_len * dtype_bytes
    logits = tokens * spec.vocab * (dtype_bytes + 12)
    return spec.layers * per_layer + logits


def estimate(spec: ModelSpec, dtype: str, parallel: str, world_size: int, on_gpu: bool,
             bucket_view: bool = False, process_bytes: int = 0) -> MemoryEstimate:
    """What one rank needs to train ``spec``; see the module doc for each part."""
    size = DTYPE_BYTES[dtype]
    params = spec.parameter_count()
    if parallel == "fsdp":
        shard = -(-params // max(1, world_size))
        unsharded = 2 * layer_parameters(spec) if world_size > 1 else 0
        weights, gradients = (shard + unsharded) * size, (shard + unsharded) * size
        optimizer = 3 * shard * size     # two states + foreach temporaries
        buckets = 0
    else:
        weights = gradients = params * size
        optimizer = 3 * params * size
        buckets = 0 if bucket_view or world_size == 1 else params * size
    return MemoryEstimate(weights, gradients, optimizer, buckets,
                          activation_bytes(spec, size, on_gpu),
                          0 if on_gpu else process_bytes)


def for_config(config: TrainConfig, world_size: int, on_gpu: bool,
               process_bytes: int = 0) -> MemoryEstimate:
    """The largest estimate over the configurations of the run's grid."""
    spec = config.model_spec(config.resolved_preset(on_gpu))
    dtype = config.resolved_dtype(on_gpu)
    views = {k.gradient_as_bucket_view for k in config.grid()}
    return max((estimate(spec, dtype, config.parallel, world_size, on_gpu, view, process_bytes)
                for view in views), key=lambda e: e.total)


def alternatives(config: TrainConfig, world_size: int, on_gpu: bool, available: int,
                 process_bytes: int) -> list[str]:
    """What would fit in ``available`` bytes per rank: FSDP over enough ranks, bfloat16, a
    smaller preset."""
    spec = config.model_spec(config.resolved_preset(on_gpu))
    dtype = config.resolved_dtype(on_gpu)
    ideas = []

    def fits(s: ModelSpec, d: str, parallel: str, n: int) -> bool:
        return estimate(s, d, parallel, n, on_gpu, False, process_bytes).total <= available

    for d in dict.fromkeys([dtype, "bfloat16"]):
        ranks = next((n for n in (2 ** k for k in range(13)) if fits(spec, d, "fsdp", n)), None)
        if ranks is not None:
            how = "--parallel fsdp" + ("" if d == dtype else " --dtype bfloat16")
            where = (f"on these {world_size} ranks" if ranks <= world_size
                     else f"over at least {ranks} ranks")
            ideas.append(f"{how} {where}")
            break
    if dtype != "bfloat16" and fits(spec, "bfloat16", config.parallel, world_size):
        ideas.append("--dtype bfloat16")
    current = list(PRESETS).index(config.resolved_preset(on_gpu))
    for name in reversed(list(PRESETS)[:current]):
        smaller = replace(config, preset=name).model_spec(name)
        if fits(smaller, dtype, config.parallel, world_size):
            ideas.append(f"--preset {name}")
            break
    return ideas


def preflight(config: TrainConfig, world_size: int, ranks_per_node: int, on_gpu: bool,
              free_bytes: int, process_bytes: int, where: str) -> MemoryEstimate:
    """The estimate; UsageError (exit 2) when it exceeds ``free_bytes`` per rank, unless
    --force. ``free_bytes`` is this rank's share: free device memory, or available host
    memory divided by the ranks of this node."""
    found = for_config(config, world_size, on_gpu, process_bytes)
    if found.total <= free_bytes or config.force:
        return found
    preset = config.resolved_preset(on_gpu)
    ideas = alternatives(config, world_size, on_gpu, free_bytes, process_bytes)
    raise UsageError(
        f"--preset: {preset} ({config.parallel}, {config.resolved_dtype(on_gpu)}) needs about "
        f"{format_size(found.total)} per rank ({found.parts()}) but {format_size(free_bytes)} "
        f"is free per rank ({where}); would fit: "
        f"{', '.join(ideas) if ideas else 'nothing smaller on this machine'}; "
        "--force tries anyway")
