"""The memory pre-flight's arithmetic, by part, and its verdict (pure)."""

from __future__ import annotations

import pytest

from collscope.errors import UsageError
from collscope.train import memory
from collscope.train.config import PRESETS, TrainConfig

GIB = 1024**3


def test_parts_of_a_ddp_estimate_follow_the_parameter_count():
    spec = PRESETS["llama2-7b"]
    p = spec.parameter_count()
    assert p == 6_738_415_616                     # Llama-2-7B with untied embeddings
    e = memory.estimate(spec, "bfloat16", "ddp", 8, on_gpu=True)
    assert (e.weights, e.gradients, e.optimizer, e.buckets) == (2 * p, 2 * p, 6 * p, 2 * p)
    assert e.process == 0                         # device memory: no host process
    view = memory.estimate(spec, "bfloat16", "ddp", 8, on_gpu=True, bucket_view=True)
    assert view.buckets == 0 and view.total == e.total - 2 * p


def test_fsdp_shards_the_states_and_keeps_two_layers_whole():
    spec = PRESETS["llama2-7b"]
    p, layer = spec.parameter_count(), memory.layer_parameters(spec)
    e = memory.estimate(spec, "bfloat16", "fsdp", 8, on_gpu=True)
    shard = -(-p // 8)
    assert e.weights == e.gradients == (shard + 2 * layer) * 2
    assert e.optimizer == 3 * shard * 2 and e.buckets == 0
    assert memory.estimate(spec, "bfloat16", "fsdp", 64, True).total < e.total


def test_activations_scale_with_tokens_and_cpu_keeps_attention_probabilities():
    spec = PRESETS["small"]
    gpu = memory.activation_bytes(spec, 4, on_gpu=True)
    cpu = memory.activation_bytes(spec, 4, on_gpu=False)
    attention = spec.layers * spec.batch_size * spec.heads * spec.seq_len ** 2 * 4
    assert cpu - gpu == attention
    doubled = memory.activation_bytes(TrainConfig(batch_size=16).model_spec("small"), 4, True)
    assert doubled == 2 * gpu


def test_preflight_refuses_with_the_estimate_and_what_would_fit():
    config = TrainConfig(preset="llama2-7b")
    with pytest.raises(UsageError) as error:
        memory.preflight(config, 8, 8, True, 80 * GIB, 0, "device cuda:0 free memory")
    text = str(error.value)
    assert text.startswith("--preset: llama2-7b (ddp, bfloat16) needs about ")
    assert "80 GiB is free per rank (device cuda:0 free memory)" in text
    assert "--parallel fsdp on these 8 ranks" in text and "--force tries anyway" in text
    # --force goes ahead; a model that fits passes.
    forced = TrainConfig(preset="llama2-7b", force=True)
    assert memory.preflight(forced, 8, 8, True, 80 * GIB, 0, "x").total > 80 * GIB
    assert memory.preflight(TrainConfig(preset="small"), 8, 8, True, 80 * GIB, 0, "x")


def test_alternatives_on_a_cpu_host_name_a_smaller_preset_and_bfloat16():
    config = TrainConfig(preset="1b")
    ideas = memory.alternatives(config, 2, False, 8 * GIB, 400 * 1024**2)
    assert "--preset small" in ideas


def test_rank_preflight_under_a_launcher_checks_its_share_of_host_memory():
    from types import SimpleNamespace

    import torch

    from collscope.train.preflight import host_available_bytes, preflight_rank

    session = SimpleNamespace(device=torch.device("cpu"), world_size=2,
                              launch=SimpleNamespace(local_world_size=2))
    with pytest.raises(UsageError, match=r"free per rank \(host memory MemAvailable"):
        preflight_rank(session, TrainConfig(preset="llama2-7b"))  # type: ignore[arg-type]
    preflight_rank(session, TrainConfig(preset="tiny"))  # type: ignore[arg-type]
    assert host_available_bytes("/nonexistent") is None


def test_rank_preflight_on_a_gpu_reads_free_device_memory(monkeypatch):
    from types import SimpleNamespace

    import torch

    from collscope.train.preflight import preflight_rank
    from tests.unit.cuda_fakes import FakeGpu

    FakeGpu(free_bytes=40 * GIB).install(monkeypatch)
    session = SimpleNamespace(device=torch.device("cuda", 0), world_size=8,
                              launch=SimpleNamespace(local_world_size=8))
    with pytest.raises(UsageError, match=r"40 GiB is free per rank \(device cuda:0"):
        preflight_rank(session, TrainConfig(preset="llama2-7b"))  # type: ignore[arg-type]
