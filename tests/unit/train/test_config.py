"""TrainConfig: presets, overrides, sweeps and the grid, and one-line errors naming the flag."""

from __future__ import annotations

import pytest

from collscope.errors import UsageError
from collscope.train.config import (
    DDP_DEFAULT,
    PRESETS,
    DDPKnobs,
    TrainConfig,
    llama_intermediate,
    parse_sweep,
)


@pytest.mark.parametrize("preset, low, high", [
    ("tiny", 1e6, 10e6),          # a few M: trains in seconds on 2 CPU ranks
    ("small", 20e6, 50e6),
    ("1b", 0.9e9, 1.3e9),
    ("llama2-7b", 6.6e9, 6.9e9),  # Llama-2-7B: 6.74 B
])
def test_preset_sizes(preset, low, high):
    assert low <= PRESETS[preset].parameter_count() <= high


def test_llama2_7b_has_the_published_shape():
    spec = PRESETS["llama2-7b"]
    assert (spec.hidden, spec.layers, spec.heads, spec.intermediate, spec.vocab) == \
        (4096, 32, 32, 11008, 32000)
    assert llama_intermediate(4096) == 11008 and llama_intermediate(2048) == 5632


def test_overrides_apply_and_the_mlp_follows_the_hidden_size():
    config = TrainConfig(preset="tiny", hidden=64, layers=1, heads=2, seq_len=16, batch_size=3)
    spec = config.model_spec("tiny")
    assert (spec.hidden, spec.layers, spec.heads, spec.seq_len, spec.batch_size) == \
        (64, 1, 2, 16, 3)
    assert spec.intermediate == llama_intermediate(64) and spec.vocab == PRESETS["tiny"].vocab


def test_auto_preset_and_dtype_follow_the_device():
    config = TrainConfig()
    assert config.resolved_preset(on_gpu=False) == "tiny"
    assert config.resolved_preset(on_gpu=True) == "small"
    assert config.resolved_dtype(on_gpu=False) == "float32"
    assert config.resolved_dtype(on_gpu=True) == "bfloat16"


@pytest.mark.parametrize("text, name, values", [
    ("bucket_cap_mb=1,5,25,100", "bucket_cap_mb", [1.0, 5.0, 25.0, 100.0]),
    ("comm_hook=none,bf16", "comm_hook", ["none", "bf16"]),
    ("gradient_as_bucket_view=0,1", "gradient_as_bucket_view", [False, True]),
    ("static-graph=true,false", "static_graph", [True, False]),
])
def test_parse_sweep(text, name, values):
    assert parse_sweep(text) == (name, values)


@pytest.mark.parametrize("text, message", [
    ("bucket_cap_mb", "is not NAME=V1,V2,..."),
    ("lr=1,2", "NAME is one of bucket_cap_mb, gradient_as_bucket_view, static_graph, "
               "comm_hook"),
    ("bucket_cap_mb=", "lists no values"),
    ("bucket_cap_mb=0", "must be a number of MB > 0"),
    ("comm_hook=int8", "use none, fp16, bf16, powersgd, hierarchical"),
    ("static_graph=maybe", "use 0 or 1"),
])
def test_bad_sweeps_name_the_flag(text, message):
    with pytest.raises(UsageError) as error:
        parse_sweep(text)
    assert str(error.value).startswith("--sweep: ") and message in str(error.value)


def test_grid_is_the_product_with_the_ddp_default_first_and_no_repeats():
    config = TrainConfig(sweep={"bucket_cap_mb": [1.0, 25.0], "comm_hook": ["none", "bf16"]})
    grid = config.grid()
    assert grid[0] == DDP_DEFAULT
    assert len(grid) == 4 and len(set(grid)) == 4
    assert DDPKnobs(1.0, comm_hook="bf16") in grid


def test_grid_adds_the_default_when_the_sweep_misses_it():
    config = TrainConfig(knobs=DDPKnobs(gradient_as_bucket_view=True),
                         sweep={"comm_hook": ["fp16", "bf16"]})
    assert config.grid() == [DDP_DEFAULT, DDPKnobs(gradient_as_bucket_view=True, comm_hook="fp16"),
                             DDPKnobs(gradient_as_bucket_view=True, comm_hook="bf16")]


def test_without_a_sweep_the_grid_is_the_flags():
    knobs = DDPKnobs(bucket_cap_mb=5, comm_hook="powersgd")
    assert TrainConfig(knobs=knobs).grid() == [knobs]


@pytest.mark.parametrize("kwargs, flag", [
    ({"preset": "70b"}, "--preset"),
    ({"hidden": 0}, "--hidden"),
    ({"batch_size": -1}, "--batch-size"),
    ({"heads": 3}, "--heads"),                     # 256 / 3
    ({"dtype": "float8"}, "--dtype"),
    ({"parallel": "pipeline"}, "--parallel"),
    ({"knobs": DDPKnobs(bucket_cap_mb=0)}, "--bucket-cap-mb"),
    ({"knobs": DDPKnobs(comm_hook="int8")}, "--comm-hook"),
    ({"steps": 1}, "--steps"),
    ({"warmup": 1}, "--warmup"),
    ({"lr": 0}, "--lr"),
    ({"timeout_s": 0}, "--timeout"),
    ({"parallel": "fsdp", "sweep": {"comm_hook": ["none"]}}, "--sweep"),
    ({"parallel": "fsdp", "knobs": DDPKnobs(comm_hook="bf16")}, "--comm-hook"),
])
def test_bad_config_names_the_flag(kwargs, flag):
    with pytest.raises(UsageError) as error:
        TrainConfig(**kwargs)
    assert str(error.value).startswith(flag)


def test_odd_head_size_is_refused_for_rotary_embeddings():
    with pytest.raises(UsageError, match="--heads: head size 7 must be even"):
        TrainConfig(hidden=56, heads=8)


def test_ranks_per_node_must_divide_the_world():
    config = TrainConfig(ranks_per_node=3)
    with pytest.raises(UsageError, match="--ranks-per-node: 3 does not divide the world size 4"):
        config.validate_for_job(4, "gloo")
    config.validate_for_job(6, "gloo")


def test_hier_chunk_must_be_positive():
    with pytest.raises(UsageError, match="^--hier-chunk: 0 must be >= 1$"):
        TrainConfig(hier_chunk_bytes=0)
