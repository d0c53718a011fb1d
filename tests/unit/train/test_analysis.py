"""The arithmetic of `collscope train`: table-driven checks of the pure functions."""

from __future__ import annotations

import statistics

import pytest

from collscope.train.analysis import (
    Bucket,
    comm_messages,
    ddp_call,
    drift,
    exposed_comm,
    exposed_comm_ci,
    overlap_fraction,
    paired_iqr,
    powersgd_elements,
    quantile,
    rank_by_step_time,
    recommendation,
    speedup,
    spread,
)
from collscope.train.config import DDP_DEFAULT, DDPKnobs


def test_spread_and_quantiles_match_numpy_linear():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    s = spread(values)
    assert (s.median, s.p25, s.p75, s.min, s.max) == (3.0, 2.0, 4.0, 1.0, 5.0)
    assert s.iqr == 2.0
    assert quantile([1.0, 2.0], 0.5) == 1.5
    assert quantile([7.0], 0.9) == 7.0


@pytest.mark.parametrize("sync, nosync, expected", [
    ([120, 100, 110], [90, 95, 100], 10.0),        # pairs 30, 5, 10 (medians differ by 15)
    ([100, 100], [100, 100], 0.0),
    ([99, 98, 97], [100, 100, 100], -2.0),         # hidden + noise: left negative, visible
])
def test_exposed_comm_is_the_median_of_per_pair_differences(sync, nosync, expected):
    assert exposed_comm(sync, nosync) == pytest.approx(expected)


def test_exposed_comm_follows_the_pairs_when_the_machine_drifts():
    """Three pairs ran on a machine slowed by 20 ms: per pair the sync step costs 1-3 ms more
    (median 2). The difference of medians takes its medians from different pairs (31 - 30)."""
    sync = [11.0, 13.0, 31.0, 33.0, 32.0]
    nosync = [10.0, 10.0, 30.0, 30.0, 30.0]
    assert exposed_comm(sync, nosync) == 2.0
    assert statistics.median(sync) - statistics.median(nosync) == 1.0


def test_exposed_comm_ci_is_order_statistics_of_the_differences():
    sync = [float(20 + d) for d in range(20)]
    nosync = [20.0] * 20                    # differences 0..19
    ci = exposed_comm_ci(sync, nosync)
    assert (ci.median, ci.low, ci.high) == (9.5, 5.0, 14.0)   # x_(6), x_(15) of 20
    assert ci.confidence == pytest.approx(0.9586, abs=1e-4)
    few = exposed_comm_ci([3.0, 5.0], [1.0, 1.0])           # 2 steps cannot give 95%
    assert (few.low, few.high, few.confidence) == (2.0, 4.0, 0.5)


def test_paired_iqr_is_the_spread_of_per_step_differences():
    assert paired_iqr([10, 20, 30, 40, 50], [0, 10, 20, 30, 40]) == 0.0
    assert paired_iqr([10, 12, 14, 16, 18], [0, 0, 0, 0, 0]) == pytest.approx(4.0)


@pytest.mark.parametrize("exposed, pure, fraction, clamped", [
    (5.0, 20.0, 0.75, False),
    (0.0, 20.0, 1.0, False),
    (20.0, 20.0, 0.0, False),
    (-2.0, 20.0, 1.0, True),      # noise below zero
    (30.0, 20.0, 0.0, True),      # comm slowed by competing compute
    (5.0, 0.0, None, False),      # nothing communicated: undefined
    (None, 10.0, None, False),
])
def test_overlap_fraction_is_clamped_and_says_so(exposed, pure, fraction, clamped):
    assert overlap_fraction(exposed, pure) == (fraction, clamped)


def test_powersgd_compresses_matrices_worth_it_and_sends_vectors_whole():
    # 1024x1024 -> P 1024 + Q 1024 (rank 1); a bias vector and a 4x4 stay uncompressed.
    assert powersgd_elements([(1024, 1024), (1024,), (4, 4)]) == (1024 + 16, 1024, 1024)
    # conv-like weights are viewed as (shape[0], rest)
    assert powersgd_elements([(64, 3, 3, 3)]) == (0, 64, 27)


def test_comm_messages_per_hook():
    buckets = [Bucket(4 * 1000, ((10, 100),)), Bucket(4 * 24, ((24,),))]
    assert comm_messages("none", buckets, "float") == [(4000, "float"), (96, "float")]
    assert comm_messages("hierarchical", buckets, "float") == [(4000, "float"), (96, "float")]
    assert comm_messages("fp16", buckets, "float") == [(2000, "half"), (48, "half")]  # halved
    assert comm_messages("bf16", buckets, "float") == [(2000, "bfloat16"), (48, "bfloat16")]
    # a bf16 model (GPUs): a bf16 hook saves nothing
    assert comm_messages("bf16", buckets, "bfloat16") == [(4000, "bfloat16"), (96, "bfloat16")]
    # PowerSGD: 10x100 -> P 10 + Q 100; the vector goes whole; empty parts are not sent
    assert comm_messages("powersgd", buckets, "float") == [(40, "float"), (400, "float"),
                                                           (96, "float")]


def test_speedup():
    assert speedup(200.0, 100.0) == 2.0
    assert speedup(None, 100.0) is None


@pytest.mark.parametrize("knobs, call", [
    (DDP_DEFAULT, "model = DistributedDataParallel(model)"),
    (DDPKnobs(bucket_cap_mb=5, gradient_as_bucket_view=True),
     "model = DistributedDataParallel(model, bucket_cap_mb=5, gradient_as_bucket_view=True)"),
    (DDPKnobs(static_graph=True, comm_hook="bf16"),
     "model = DistributedDataParallel(model, static_graph=True); "
     "model.register_comm_hook(None, default_hooks.bf16_compress_hook)"),
    (DDPKnobs(bucket_cap_mb=0.5, comm_hook="powersgd"),
     "model = DistributedDataParallel(model, bucket_cap_mb=0.5); model.register_comm_hook("
     "powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=1, "
     "start_powerSGD_iter=2), powerSGD_hook.powerSGD_hook)"),
])
def test_ddp_call_names_only_what_differs_from_the_defaults(knobs, call):
    assert ddp_call(knobs) == call


def test_ddp_call_for_the_hierarchical_hook_names_the_layout():
    assert "ranks_per_node=8" in ddp_call(DDPKnobs(comm_hook="hierarchical"), 8)
    assert "chunk_bytes" not in ddp_call(DDPKnobs(comm_hook="hierarchical"), 8)


def test_ddp_call_for_the_hierarchical_hook_names_a_chunk_other_than_the_default():
    call = ddp_call(DDPKnobs(comm_hook="hierarchical"), 8, 4 << 20)
    assert "device_type=device.type, chunk_bytes=4194304), " in call


def _row(knobs, median, p25=None, p75=None):
    return {"knobs": knobs, "step_time_ms": median, "step_time_ms_p25": p25 or median,
            "step_time_ms_p75": p75 or median}


def test_ranking_is_by_step_time():
    rows = [_row(DDP_DEFAULT, 30.0), _row(DDPKnobs(1.0), 10.0), _row(DDPKnobs(5.0), 20.0)]
    assert [r["step_time_ms"] for r in rank_by_step_time(rows)] == [10.0, 20.0, 30.0]


def test_recommendation_gives_the_exact_ddp_arguments_and_the_gain():
    rows = [_row(DDP_DEFAULT, 100.0, 95.0, 105.0),
            _row(DDPKnobs(bucket_cap_mb=5, comm_hook="bf16"), 80.0, 78.0, 82.0)]
    assert recommendation(rows) == (
        "recommendation: model = DistributedDataParallel(model, bucket_cap_mb=5); "
        "model.register_comm_hook(None, default_hooks.bf16_compress_hook)  "
        "# 1.25x the DDP default's step rate")


def test_recommendation_flags_a_win_within_noise():
    rows = [_row(DDP_DEFAULT, 100.0, 90.0, 110.0), _row(DDPKnobs(bucket_cap_mb=5), 98.0,
                                                         92.0, 104.0)]
    assert recommendation(rows).endswith("(within the default's step-to-step spread: confirm "
                                         "with more --steps)")


def test_recommendation_keeps_the_default_when_nothing_beats_it():
    rows = [_row(DDP_DEFAULT, 50.0), _row(DDPKnobs(bucket_cap_mb=1), 70.0)]
    assert recommendation(rows).startswith("recommendation: keep DDP's defaults")


def test_recommendation_warns_when_the_machine_drifted():
    rows = [_row(DDP_DEFAULT, 100.0, 99.0, 101.0), _row(DDPKnobs(bucket_cap_mb=5), 50.0,
                                                         49.0, 51.0)]
    assert recommendation(rows, drifted=True).endswith(
        "(the machine's speed drifted during the sweep: confirm on a quiet machine)")


def test_drift_is_the_ratio_of_the_no_sync_steps():
    assert drift([100.0, 110.0, 125.0]) == 1.25
    assert drift([80.0]) == 1.0
