"""Step plans: the communication of one training step, predicted at several node counts (pure).

Message sizes use the accounting of `collscope train`: the Llama parameter layout of
``train.config.ModelSpec.parameter_shapes`` (whose sum is ``parameter_count``), DDP buckets as
DDP rebuilds them after the first step, and the wire dtype of each comm hook from
``train.analysis.comm_messages``.

- DDP: one all_reduce per gradient bucket. Buckets are filled in reverse parameter order (the
  order gradients become ready in backward) and closed once they reach their cap: 1 MiB for the
  first (``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES``), ``bucket_cap_mb`` MiB after, as
  ``torch.distributed._compute_bucket_assignment_by_size`` assigns them.
- FSDP (FSDP2 ``fully_shard`` per decoder layer, then the root): per layer an all_gather in
  forward, another in backward (layers are resharded after forward) and a reduce_scatter of its
  gradient; the root (embeddings, final norm, head) is gathered once and reduce-scattered once.
  Sizes are nccl-tests' size column: the unsharded bytes of the group.

Predicted communication per step is the sum of the messages' predicted times (one after another
on one stream, as DDP's buckets and FSDP's per-layer collectives run). Exposed communication is
(1 - overlap) x that; the step is compute + exposed; tokens/s = ranks x batch x sequence / step;
scaling efficiency = step at the first node count / step at N (weak scaling: fixed per-rank
batch).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from collscope.collectives.dtypes import DTYPES
from collscope.model.costmodel import CostModel, ModelError, predict
from collscope.records.model import PlanRowRecord
from collscope.train.analysis import Bucket, comm_messages
from collscope.train.config import ModelSpec

FIRST_BUCKET_BYTES = 1 << 20       # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
BUCKET_CAPS_MB = (1.0, 5.0, 25.0, 100.0)  # the bucket caps a plan compares


@dataclass(frozen=True)
class PlanConfig:
    """What one step communicates: the model, the parallelism and the DDP knobs."""

    spec: ModelSpec | None           # None: --params only (DDP, one flat parameter list)
    params: int
    parallel: str = "ddp"
    bucket_cap_mb: float = 25.0
    comm_hook: str = "none"          # none, bf16, fp16, hierarchical
    dtype: str = "bfloat16"          # parameters and gradients (collscope bench names)

    @property
    def element_size(self) -> int:
        return DTYPES[self.dtype].size


@dataclass(frozen=True)
class Message:
    collective: str
    size_bytes: int
    dtype: str
    phase: str
    algo: str = "auto"               # hierarchical for the hierarchical hook


def ddp_buckets(sizes_bytes: Sequence[int], bucket_cap_mb: float) -> list[int]:
    """Bucket bytes of parameters given in module order, as DDP's rebuilt buckets."""
    limits = [FIRST_BUCKET_BYTES, int(bucket_cap_mb * 1024 * 1024)]
    buckets: list[int] = []
    current = 0
    for nbytes in reversed(sizes_bytes):
        current += nbytes
        if current >= limits[min(len(buckets), 1)]:
            buckets.append(current)
            current = 0
    if current:
        buckets.append(current)
    return buckets


def _parameter_bytes(config: PlanConfig) -> list[int]:
    if config.spec is None:
        return [config.params * config.element_size]
    return [math.prod(shape) * config.element_size for _, shape in config.spec.parameter_shapes()]


def step_messages(config: PlanConfig) -> list[Message]:
    """The collectives of one step, in order."""
    if config.parallel == "fsdp":
        return _fsdp_messages(config)
    if config.spec is None:
        # No layout: the parameters as one tensor list of cap-sized chunks.
        cap = int(config.bucket_cap_mb * 1024 * 1024)
        total = config.params * config.element_size
        sizes = [FIRST_BUCKET_BYTES] + [cap] * ((total - FIRST_BUCKET_BYTES) // cap)
        sizes.append(total - sum(sizes))
        buckets = [Bucket(s) for s in sizes if s > 0]
    else:
        buckets = [Bucket(b) for b in ddp_buckets(_parameter_bytes(config), config.bucket_cap_mb)]
    algo = "hierarchical" if config.comm_hook == "hierarchical" else "auto"
    return [Message("all_reduce", nbytes, dtype, "gradient all-reduce", algo)
            for nbytes, dtype in comm_messages(config.comm_hook, buckets, config.dtype)]


def _fsdp_messages(config: PlanConfig) -> list[Message]:
    spec = config.spec
    if spec is None:
        raise ModelError("--parallel fsdp: needs --preset (FSDP shards per decoder layer)")
    # parameter_shapes(): embeddings, then each layer's tensors, then the final norm and head.
    per_layer = (len(spec.parameter_shapes()) - 3) // max(spec.layers, 1)
    sizes = _parameter_bytes(config)
    layers = [sum(sizes[1 + i * per_layer: 1 + (i + 1) * per_layer]) for i in range(spec.layers)]
    root = sizes[0] + sizes[-2] + sizes[-1]
    dtype = config.dtype
    forward = [Message("all_gather", root, dtype, "forward all-gather")] + \
        [Message("all_gather", b, dtype, "forward all-gather") for b in layers]
    backward: list[Message] = []
    for b in reversed(layers):
        backward.append(Message("all_gather", b, dtype, "backward all-gather"))
        backward.append(Message("reduce_scatter", b, dtype, "gradient reduce-scatter"))
    backward.append(Message("reduce_scatter", root, dtype, "gradient reduce-scatter"))
    return forward + backward


@dataclass
class CommEstimate:
    comm_ms: float
    comm_ms_low: float
    comm_ms_high: float
    algos: dict[str, int]            # algorithm -> messages it was predicted with
    extrapolated: int = 0            # messages outside the sizes their groups were fitted on
    phase_ms: dict[str, float] = field(default_factory=dict)   # per phase of the step


def comm_time(model: CostModel, messages: Sequence[Message], nodes: int,
              ranks_per_node: int) -> CommEstimate:
    """Predicted time of the messages one after another (ModelError when one cannot be)."""
    total = low = high = 0.0
    outside = 0
    algos: Counter[str] = Counter()
    phases: Counter[str] = Counter()
    cache: dict[tuple[str, int, str], Any] = {}
    for m in messages:
        key = (m.collective, m.size_bytes, m.algo)
        if key not in cache:
            candidates = ("hierarchical",) if m.algo == "hierarchical" else ("ring", "tree")
            # One rank communicates nothing.
            cache[key] = predict(model, m.collective, [m.size_bytes], nodes, ranks_per_node,
                                 m.algo, candidates)[0] if nodes * ranks_per_node > 1 else None
        p = cache[key]
        if p is None:
            continue
        total += p.time_us
        low += p.time_us_low
        high += p.time_us_high
        algos[p.algo] += 1
        outside += p.extrapolated
        phases[m.phase] += p.time_us / 1e3
    return CommEstimate(total / 1e3, low / 1e3, high / 1e3, dict(algos), outside, dict(phases))


def knob_variants(config: PlanConfig) -> list[tuple[str, PlanConfig]]:
    """The DDP settings a plan compares with the given one (FSDP: none)."""
    if config.parallel != "ddp":
        return []
    variants = [(f"bucket_cap_mb={cap:g}", replace(config, bucket_cap_mb=cap))
                for cap in BUCKET_CAPS_MB if cap != config.bucket_cap_mb]
    if config.comm_hook != "bf16" and config.dtype == "float":
        variants.append(("comm_hook=bf16", replace(config, comm_hook="bf16")))
    if config.comm_hook != "hierarchical":
        variants.append(("comm_hook=hierarchical", replace(config, comm_hook="hierarchical")))
    return variants


def plan(model: CostModel, config: PlanConfig, nodes_list: Sequence[int], ranks_per_node: int,
         overlap: float, compute_ms: float | None, tokens_per_rank: int | None,
         ) -> list[PlanRowRecord]:
    messages = step_messages(config)
    variants = [(name, step_messages(c)) for name, c in knob_variants(config)]
    rows = []
    for nodes in nodes_list:
        world = nodes * ranks_per_node
        row = PlanRowRecord(nodes, ranks_per_node, world, len(messages),
                      sum(m.size_bytes for m in messages))
        try:
            estimate = comm_time(model, messages, nodes, ranks_per_node)
        except ModelError as error:
            row.note = str(error)
            rows.append(row)
            continue
        row.comm_ms, row.comm_ms_low, row.comm_ms_high = (estimate.comm_ms, estimate.comm_ms_low,
                                                          estimate.comm_ms_high)
        row.algos, row.extrapolated = estimate.algos, estimate.extrapolated
        row.phase_ms = estimate.phase_ms
        row.exposed_ms = (1 - overlap) * estimate.comm_ms
        if compute_ms is not None:
            row.step_ms = compute_ms + row.exposed_ms
            if tokens_per_rank and row.step_ms > 0:
                row.tokens_per_s = world * tokens_per_rank / (row.step_ms / 1e3)
        best: tuple[float, str] | None = None
        for name, variant in variants:
            try:
                ms = comm_time(model, variant, nodes, ranks_per_node).comm_ms
            except ModelError:
                continue
            if ms < estimate.comm_ms and (best is None or ms < best[0]):
                best = (ms, name)
        if best:
            row.best_knob_comm_ms, row.best_knob = best
        rows.append(row)
    base = next((r for r in rows if r.step_ms), None)
    for r in rows:
        if base and base.step_ms and r.step_ms:
            r.scaling_efficiency = base.step_ms / r.step_ms
    return rows
