"""`collscope train` configuration: model presets, DDP knobs, sweeps. One typed dataclass.

Pure (no torch, no transformers): the CLI builds and validates it before any rank starts, so
bad input exits 2 at once with one line naming the flag.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from collscope.config_flags import (
    backend_flag,
    check_choice,
    flag,
    hier_chunk_flag,
    invalid,
    json_flag,
    timeout_flag,
)
from collscope.errors import UsageError

PARALLEL = ("ddp", "fsdp")
COMM_HOOKS = ("none", "fp16", "bf16", "powersgd", "hierarchical")
DTYPES = ("auto", "float32", "bfloat16")


@dataclass(frozen=True)
class ModelSpec:
    """The Llama architecture and the batch shape one configuration trains."""

    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int
    seq_len: int
    batch_size: int
    kv_heads: int | None = None  # grouped-query attention; None = heads

    def parameter_count(self) -> int:
        """Parameters of LlamaForCausalLM with untied embeddings (bias-free, RMSNorm)."""
        return sum(math.prod(shape) for _, shape in self.parameter_shapes())

    def parameter_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """(name, shape) of every parameter of LlamaForCausalLM with untied embeddings, in the
        order of ``module.parameters()``: the order DDP buckets (reversed) and FSDP shards."""
        h = self.hidden
        kv = (self.kv_heads or self.heads) * (h // self.heads)
        shapes: list[tuple[str, tuple[int, ...]]] = [("model.embed_tokens.weight",
                                                      (self.vocab, h))]
        for i in range(self.layers):
            prefix = f"model.layers.{i}."
            shapes += [(prefix + "self_attn.q_proj.weight", (h, h)),
                       (prefix + "self_attn.k_proj.weight", (kv, h)),
                       (prefix + "self_attn.v_proj.weight", (kv, h)),
                       (prefix + "self_attn.o_proj.weight", (h, h)),
                       (prefix + "mlp.gate_proj.weight", (self.intermediate, h)),
                       (prefix + "mlp.up_proj.weight", (self.intermediate, h)),
                       (prefix + "mlp.down_proj.weight", (h, self.intermediate)),
                       (prefix + "input_layernorm.weight", (h,)),
                       (prefix + "post_attention_layernorm.weight", (h,))]
        return shapes + [("model.norm.weight", (h,)), ("lm_head.weight", (self.vocab, h))]


# `tiny` trains in seconds on two CPU ranks; `small` is 20-50 M parameters; `1b` is
# TinyLlama-shaped (grouped-query attention, 4 KV heads); `llama2-7b` is Llama-2-7B's shape.
PRESETS: dict[str, ModelSpec] = {
    "tiny": ModelSpec(hidden=256, layers=4, heads=4, intermediate=688, vocab=4096, seq_len=64,
                      batch_size=2),
    "small": ModelSpec(hidden=512, layers=8, heads=8, intermediate=1376, vocab=8192,
                       seq_len=256, batch_size=8),
    "1b": ModelSpec(hidden=2048, layers=22, heads=32, intermediate=5632, vocab=32000,
                    seq_len=1024, batch_size=4, kv_heads=4),
    "llama2-7b": ModelSpec(hidden=4096, layers=32, heads=32, intermediate=11008, vocab=32000,
                           seq_len=2048, batch_size=1),
}
# `--preset auto`: what runs well where it lands (resolved on the ranks, which know the device).
AUTO_PRESET = {"cpu": "tiny", "gpu": "small"}


def llama_intermediate(hidden: int) -> int:
    """Llama's MLP width for a hidden size: 8/3 x hidden, rounded up (to 256 at scale)."""
    multiple = 256 if hidden >= 1024 else 16
    return int(math.ceil(8 * hidden / 3 / multiple) * multiple)


@dataclass(frozen=True)
class DDPKnobs:
    """The DistributedDataParallel settings a sweep varies. Defaults are DDP's own."""

    bucket_cap_mb: float = flag(25.0, "--bucket-cap-mb", type=float, metavar="MB",
                                shown="25, DDP's", help="DDP gradient bucket size")
    gradient_as_bucket_view: bool = flag(False, "--gradient-as-bucket-view",
                                         help="DDP: gradients are views into the buckets "
                                              "(saves a copy and memory)")
    static_graph: bool = flag(False, "--static-graph",
                              help="DDP: the graph is the same every step")
    comm_hook: str = flag("none", "--comm-hook", shown="none",
                          help=f"DDP comm hook: {', '.join(COMM_HOOKS)}")

    def label(self) -> str:
        """Short name for tables, e.g. '25MB none' or '5MB bf16 view static'."""
        parts = [f"{self.bucket_cap_mb:g}MB", self.comm_hook]
        if self.gradient_as_bucket_view:
            parts.append("view")
        if self.static_graph:
            parts.append("static")
        return " ".join(parts)


DDP_DEFAULT = DDPKnobs()
SWEEPABLE = tuple(f.name for f in fields(DDPKnobs))


def parse_sweep(text: str) -> tuple[str, list[Any]]:
    """``NAME=V1,V2,...`` -> (name, typed values); UsageError naming --sweep otherwise."""
    name, sep, values = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or name not in SWEEPABLE:
        raise UsageError(f"--sweep: '{text}' is not NAME=V1,V2,...; NAME is one of "
                         f"{', '.join(SWEEPABLE)}")
    items = [v.strip() for v in values.split(",") if v.strip()]
    if not items:
        raise UsageError(f"--sweep: '{text}' lists no values; e.g. {name}=1,25")
    return name, [_sweep_value(name, item) for item in items]


def sweep_grid(texts: list[str]) -> dict[str, list[Any]]:
    """The --sweep texts as name -> values (a name given twice keeps its last values)."""
    return dict(parse_sweep(text) for text in texts)


def _sweep_value(name: str, text: str) -> Any:
    if name == "bucket_cap_mb":
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise UsageError(f"--sweep: bucket_cap_mb value '{text}' must be a number of "
                             "MB > 0, e.g. bucket_cap_mb=1,5,25,100")
        return value
    if name == "comm_hook":
        if text not in COMM_HOOKS:
            raise UsageError(f"--sweep: comm_hook value '{text}' is not accepted; use "
                             f"{', '.join(COMM_HOOKS)}")
        return text
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise UsageError(f"--sweep: {name} value '{text}' is not accepted; use 0 or 1")


@dataclass
class TrainConfig:
    """One `collscope train` invocation: the model, the parallelism, the measurement."""

    preset: str = flag("auto", "--preset", show_default=False,
                       help=f"{', '.join(PRESETS)}, or auto: tiny on CPU, small on GPUs")
    hidden: int | None = flag(None, "--hidden", type=int, metavar="N",
                              help="override the preset's hidden size")
    layers: int | None = flag(None, "--layers", type=int, metavar="N",
                              help="override the preset's decoder layers")
    heads: int | None = flag(None, "--heads", type=int, metavar="N",
                             help="override the preset's attention heads")
    seq_len: int | None = flag(None, "--seq-len", type=int, metavar="N",
                               help="override the preset's tokens per sequence")
    batch_size: int | None = flag(None, "--batch-size", type=int, metavar="N",
                                  help="override the preset's sequences per rank and step")
    dtype: str = flag("auto", "--dtype", show_default=False,
                      help="auto (bfloat16 on GPUs, float32 on CPU), float32, bfloat16")
    parallel: str = flag("ddp", "--parallel", show_default=False,
                         help="ddp (default) or fsdp (FSDP2)")
    # DDP settings when there is no sweep (the base of the grid when there is): DDPKnobs' flags
    knobs: DDPKnobs = field(default_factory=DDPKnobs)
    # --sweep NAME=V1,V2 (parse_sweep): name -> values; the grid is their product
    sweep: dict[str, list[Any]] = flag(
        {}, "--sweep", action="append", metavar="NAME=V1,V2,...", to_field=sweep_grid,
        show_default=False,
        help=f"vary a DDP setting (repeatable; the grid is the product): "
             f"{', '.join(SWEEPABLE)}; booleans take 0,1")
    ranks_per_node: int | None = flag(
        None, "--ranks-per-node", type=int, metavar="R",
        help="ranks per node for --comm-hook hierarchical (default: from the launcher; set it "
             "to emulate nodes on one machine)")
    hier_chunk_bytes: int = hier_chunk_flag()
    steps: int = flag(8, "--steps", type=int,
                      help="timed steps per configuration, each with and without sync")
    warmup: int = flag(3, "--warmup", type=int, help="warm-up steps per configuration")
    lr: float = flag(3e-3, "--lr", type=float, show_default=False, help="AdamW learning rate")
    seed: int = flag(0, "--seed", type=int, show_default=False,
                     help="seed of weights and batches")
    trace_dir: str | None = flag(None, "--trace", metavar="DIR",
                                 help="write per-rank torch.profiler Chrome traces "
                                      "(trace_rank<N>.json) of a few steps; one sub-folder per "
                                      "configuration in a sweep")
    trace_steps: int = flag(3, "--trace-steps", type=int,
                            help="synchronised steps each --trace records (collscope trace's "
                                 "straggler test needs about 6 or more)")
    backend: str = backend_flag()
    timeout_s: float = timeout_flag("a step (waiting on peers)")
    force: bool = flag(False, "--force",
                       help="train even when the memory pre-flight (weights, gradients, AdamW "
                            "states, DDP buckets or FSDP shards, activations) says it does not "
                            "fit; by default such a run exits 2 with the estimate and what "
                            "would fit")

    def __post_init__(self) -> None:
        if self.preset not in (*PRESETS, "auto"):
            raise invalid(self, "preset", f"'{self.preset}' is not accepted; use "
                             f"{', '.join(PRESETS)} or auto")
        for name in ("hidden", "layers", "heads", "seq_len", "batch_size", "ranks_per_node",
                     "hier_chunk_bytes", "trace_steps"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise invalid(self, name, f"{value} must be >= 1")
        check_choice(self, "dtype", DTYPES)
        check_choice(self, "parallel", PARALLEL)
        if not self.knobs.bucket_cap_mb > 0:
            raise invalid(self.knobs, "bucket_cap_mb", f"{self.knobs.bucket_cap_mb:g} must be > 0")
        check_choice(self.knobs, "comm_hook", COMM_HOOKS)
        if self.steps < 2:
            raise invalid(self, "steps", f"{self.steps} must be >= 2 (a median needs steps)")
        if self.warmup < 2:
            # DDP rebuilds its buckets after the first step and PowerSGD compresses from the
            # second: timing earlier steps would time set-up.
            raise invalid(self, "warmup", f"{self.warmup} must be >= 2")
        if not self.lr > 0:
            raise invalid(self, "lr", f"{self.lr:g} must be > 0")
        if self.timeout_s <= 0:
            raise invalid(self, "timeout_s", f"{self.timeout_s:g} must be > 0 seconds")
        if self.parallel == "fsdp":
            if self.sweep:
                raise UsageError("--sweep: sweeps vary DDP settings; use --parallel ddp")
            if self.knobs != DDP_DEFAULT:
                raise UsageError("--comm-hook/--bucket-cap-mb/--gradient-as-bucket-view/"
                                 "--static-graph: DDP settings; drop them with --parallel fsdp")
        # The model shape must hold for every preset the ranks may resolve to.
        for preset in (AUTO_PRESET.values() if self.preset == "auto" else [self.preset]):
            spec = self.model_spec(preset)
            if spec.hidden % spec.heads:
                raise invalid(self, "heads", f"{spec.heads} does not divide the hidden size "
                                 f"{spec.hidden} (preset {preset}); use a divisor of it")
            if spec.kv_heads and spec.heads % spec.kv_heads:
                raise invalid(self, "heads", f"{spec.heads} is not a multiple of the preset's "
                                 f"{spec.kv_heads} key/value heads")
            if (spec.hidden // spec.heads) % 2:
                raise invalid(self, "heads", f"head size {spec.hidden // spec.heads} must be "
                                 "even (rotary embeddings)")

    def resolved_preset(self, on_gpu: bool) -> str:
        return AUTO_PRESET["gpu" if on_gpu else "cpu"] if self.preset == "auto" else self.preset

    def model_spec(self, preset: str) -> ModelSpec:
        """The preset with the overrides applied; the MLP follows an overridden hidden size."""
        base = PRESETS[preset]
        hidden = self.hidden or base.hidden
        heads = self.heads or base.heads
        return replace(
            base, hidden=hidden, layers=self.layers or base.layers, heads=heads,
            # An overridden head count gets plain multi-head attention.
            kv_heads=base.kv_heads if self.heads is None else None,
            intermediate=base.intermediate if self.hidden is None else llama_intermediate(hidden),
            seq_len=self.seq_len or base.seq_len, batch_size=self.batch_size or base.batch_size)

    def resolved_dtype(self, on_gpu: bool) -> str:
        return ("bfloat16" if on_gpu else "float32") if self.dtype == "auto" else self.dtype

    def grid(self) -> list[DDPKnobs]:
        """The configurations to measure, in order. A sweep always includes DDP's default
        first (the baseline of the speedup column) and never measures one setting twice."""
        if self.parallel == "fsdp" or not self.sweep:
            return [self.knobs]
        names = list(self.sweep)
        combos = [replace(self.knobs, **dict(zip(names, values)))
                  for values in itertools.product(*(self.sweep[n] for n in names))]
        return list(dict.fromkeys([DDP_DEFAULT, *combos]))

    def hooks_in_use(self) -> set[str]:
        return {knobs.comm_hook for knobs in self.grid()}

    def validate_for_job(self, world_size: int, backend: str) -> None:
        """Checks that need the job: the node layout of the hierarchical hook."""
        if self.ranks_per_node is not None and world_size % self.ranks_per_node:
            raise invalid(self, "ranks_per_node", f"{self.ranks_per_node} does not divide the "
                             f"world size {world_size}; use a divisor of it")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TrainOutputs:
    """What rank 0 writes besides stdout; not part of the recorded configuration."""

    json: str | None = json_flag("write JSON Lines: a run record, then one train record per "
                                 "configuration (flushed as measured)")
