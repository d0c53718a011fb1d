"""The model and the data: a randomly initialised Llama causal LM and learnable synthetic batches.

Nothing is downloaded: the architecture comes from a LlamaConfig built here and the weights are
random (seeded, so every configuration of a sweep starts from the same model). The batches are
synthetic but learnable, so that a falling loss shows the training step is real.
"""

from __future__ import annotations

from typing import Any

import torch

from collscope.errors import UsageError
from collscope.train.config import ModelSpec

# The synthetic task: each sequence repeats a random pattern of PATTERN_LEN tokens drawn from
# the first ALPHABET tokens of the vocabulary. A model learns within a few steps that only those
# tokens occur (loss falls from ln(vocab) towards ln(ALPHABET)), and later to copy the pattern.
PATTERN_LEN = 8
ALPHABET = 64


def _transformers() -> Any:
    """transformers, or a UsageError naming what to install: the extra may be missing, or the
    installed release may not run with this torch (transformers switches its models off below
    the torch it needs; a site on an older ROCm torch often has a newer transformers)."""
    try:
        import transformers
        from transformers.utils import is_torch_available
    except ImportError:  # the optional extra is missing
        raise UsageError("train needs transformers: pip install collscope[llm]") from None
    if not is_torch_available():
        major = transformers.__version__.split(".")[0]
        raise UsageError(f"transformers {transformers.__version__} does not run with torch "
                         f"{torch.__version__} (its models need a newer torch): "
                         f"pip install 'transformers<{major}', or a newer torch")
    return transformers


def load_model_code() -> Any:
    """transformers with the Llama modelling code imported (it loads lazily, and at about
    130 MiB it is a large part of a CPU rank's memory: the pre-flight counts it)."""
    transformers = _transformers()
    _ = transformers.LlamaConfig, transformers.LlamaForCausalLM
    return transformers


def build_model(spec: ModelSpec, device: torch.device, dtype: torch.dtype,
                seed: int) -> torch.nn.Module:
    """LlamaForCausalLM with random weights, identical on every rank (same seed)."""
    transformers = _transformers()
    config = transformers.LlamaConfig(
        vocab_size=spec.vocab, hidden_size=spec.hidden, intermediate_size=spec.intermediate,
        num_hidden_layers=spec.layers, num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads or spec.heads,
        max_position_embeddings=max(spec.seq_len, 128), tie_word_embeddings=False,
        use_cache=False)
    config._attn_implementation = "sdpa"  # fused attention on every device, no extra package
    torch.manual_seed(seed)
    # Built directly on the device in the target dtype: a 7B model initialised on the host in
    # float32 would take 27 GB of host memory and minutes of CPU time per rank.
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = transformers.LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    return model.train()


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer blocks: the unit FSDP shards one by one."""
    layers: Any = model.model.layers  # type: ignore[union-attr]
    return list(layers)


def synthetic_batch(spec: ModelSpec, seed: int, rank: int, step: int,
                    device: torch.device) -> torch.Tensor:
    """Token ids (batch, seq_len) for this rank and step: deterministic, different per rank.

    Generated on the CPU from a generator seeded by (seed, rank, step), so every configuration
    of a sweep sees the same batches.
    """
    generator = torch.Generator().manual_seed((seed * 1_000_003 + rank) * 1_000_003 + step)
    alphabet = min(ALPHABET, spec.vocab)
    pattern = torch.randint(0, alphabet, (spec.batch_size, PATTERN_LEN), generator=generator)
    repeats = -(-spec.seq_len // PATTERN_LEN)
    return pattern.repeat(1, repeats)[:, : spec.seq_len].contiguous().to(device)


def torch_dtype(name: str) -> torch.dtype:
    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[name]
