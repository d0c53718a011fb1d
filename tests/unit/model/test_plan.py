"""Step plans: message sizes from `collscope train`'s parameter layout, DDP buckets as torch."""

from __future__ import annotations

import math

import pytest

from collscope.collectives.table import bus_factor
from collscope.model.costmodel import build
from collscope.model.data import GroupKey, Measurements
from collscope.model.fit import Sample
from collscope.model.plan import PlanConfig, ddp_buckets, plan, step_messages
from collscope.train.config import PRESETS


@pytest.mark.parametrize("preset", list(PRESETS))
def test_parameter_shapes_sum_to_the_parameter_count(preset: str) -> None:
    spec = PRESETS[preset]
    assert sum(math.prod(s) for _, s in spec.parameter_shapes()) == spec.parameter_count()


def test_llama2_7b_ddp_step_sends_every_parameter_once_in_bf16() -> None:
    spec = PRESETS["llama2-7b"]
    assert spec.parameter_count() == 6_738_415_616            # 6.74e9
    messages = step_messages(PlanConfig(spec, spec.parameter_count()))
    assert sum(m.size_bytes for m in messages) == 6_738_415_616 * 2
    assert {m.collective for m in messages} == {"all_reduce"}
    # Tensors above the 25 MiB cap are buckets of their own: 7 per layer, embeddings, head.
    assert len(messages) == 7 * 32 + 2
    fp32_bf16 = step_messages(PlanConfig(spec, spec.parameter_count(), dtype="float",
                                         comm_hook="bf16"))
    assert sum(m.size_bytes for m in fp32_bf16) == 6_738_415_616 * 2


def test_fsdp_step_gathers_twice_and_reduce_scatters_once() -> None:
    spec = PRESETS["tiny"]
    messages = step_messages(PlanConfig(spec, spec.parameter_count(), parallel="fsdp"))
    gathers = [m for m in messages if m.collective == "all_gather"]
    scatters = [m for m in messages if m.collective == "reduce_scatter"]
    assert len(gathers) == 2 * spec.layers + 1 and len(scatters) == spec.layers + 1
    assert sum(m.size_bytes for m in scatters) == spec.parameter_count() * 2


@pytest.mark.parametrize("cap_mb", [1.0, 5.0, 25.0])
def test_ddp_buckets_match_torch(cap_mb: float) -> None:
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    spec = PRESETS["tiny"]
    tensors = [torch.empty(shape, dtype=torch.bfloat16) for _, shape in spec.parameter_shapes()]
    cap = int(cap_mb * 1024 * 1024)
    indices, _ = dist._compute_bucket_assignment_by_size(
        tensors[::-1], [dist._DEFAULT_FIRST_BUCKET_BYTES, cap])
    expected = [sum(tensors[::-1][i].numel() * 2 for i in bucket) for bucket in indices]
    sizes = [math.prod(s) * 2 for _, s in spec.parameter_shapes()]
    assert ddp_buckets(sizes, cap_mb) == expected


def _model() -> object:
    found = Measurements()
    for nodes, per_node, alpha, bw in ((1, 8, 20.0, 300.0), (2, 8, 100.0, 40.0)):
        factor = bus_factor("all_reduce", nodes * per_node)
        found.groups[GroupKey("all_reduce", nodes, per_node)] = [
            Sample(1 << k, alpha + (1 << k) * factor / (bw * 1e3)) for k in range(16, 31)]
    return build(found)


def test_plan_step_time_tokens_and_efficiency() -> None:
    spec = PRESETS["small"]
    config = PlanConfig(spec, spec.parameter_count())
    rows = plan(_model(), config, [1, 2], 8, overlap=0.5, compute_ms=100.0,
                tokens_per_rank=spec.batch_size * spec.seq_len)
    one, two = rows
    assert one.bytes_per_step == spec.parameter_count() * 2
    assert one.exposed_ms == pytest.approx(one.comm_ms / 2)
    assert one.step_ms == pytest.approx(100.0 + one.exposed_ms)
    assert two.tokens_per_s == pytest.approx(16 * 8 * 256 / (two.step_ms / 1e3))
    assert one.scaling_efficiency == 1.0
    assert two.scaling_efficiency == pytest.approx(one.step_ms / two.step_ms)
    assert two.comm_ms > one.comm_ms                    # the inter-node link is slower
    assert two.best_knob == "comm_hook=hierarchical"    # less crosses the slow link
    assert two.phase_ms == {"gradient all-reduce": pytest.approx(two.comm_ms)}


def test_plan_says_what_it_cannot_predict() -> None:
    spec = PRESETS["tiny"]
    rows = plan(_model(), PlanConfig(spec, spec.parameter_count(), parallel="fsdp"), [2], 8,
                0.0, None, None)
    assert rows[0].comm_ms is None and "all_gather is not in the model" in rows[0].note
