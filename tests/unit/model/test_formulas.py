"""Cost formulas, checked against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from collscope.model.formulas import (
    Level,
    MissingLevel,
    alpha_beta_time,
    busbw,
    hierarchical_time,
    ring_time,
    steps,
    tree_time,
)

GiB = 1 << 30


@pytest.mark.parametrize(("collective", "n", "expected"), [
    ("all_reduce", 8, 14), ("all_reduce", 2, 2), ("all_gather", 8, 7),
    ("reduce_scatter", 4, 3), ("sendrecv", 2, 1), ("all_reduce", 1, 1),
])
def test_ring_steps(collective: str, n: int, expected: int) -> None:
    assert steps(collective, n) == expected


@pytest.mark.parametrize(("collective", "n", "size", "alpha", "bw", "expected_us"), [
    # all_reduce on 4 ranks: factor 1.5; 1 GB at 100 GB/s busbw -> 15000 us + alpha.
    ("all_reduce", 4, 1e9, 10.0, 100.0, 15010.0),
    # all_gather on 8 ranks: factor 7/8.
    ("all_gather", 8, 8e9, 0.0, 70.0, 100000.0),
    ("broadcast", 16, 2e9, 5.0, 20.0, 100005.0),
])
def test_alpha_beta_time(collective: str, n: int, size: float, alpha: float, bw: float,
                         expected_us: float) -> None:
    assert alpha_beta_time(size, alpha, bw, collective, n) == pytest.approx(expected_us)
    # busbw of the bandwidth term alone is B.
    t = alpha_beta_time(size, 0.0, bw, collective, n)
    assert busbw(size, t, collective, n) == pytest.approx(bw)


def test_ring_uses_steps_times_step_latency() -> None:
    level = Level(step_us=2.0, busbw_gbs=50.0)
    # 2 nodes x 4 ranks: 14 steps x 2 us + 1e9 x 1.75 / 50e3 us.
    assert ring_time("all_reduce", 1e9, 2, 4, level) == pytest.approx(28 + 35000)


def test_tree_latency_is_logarithmic_in_nodes() -> None:
    intra, inter = Level(1.0, 100.0), Level(10.0, 50.0)
    # 8 nodes x 4 ranks: 2 x (3 x 1 + 3 x 10) = 66 us of latency; zero bytes.
    assert tree_time(0, 8, 4, intra, inter) == pytest.approx(66.0)
    assert tree_time(0, 5, 1, None, inter) == pytest.approx(2 * 3 * 10.0)  # ceil(log2 5) = 3


def test_hierarchical_moves_less_across_nodes() -> None:
    # Intra so fast it costs nothing: only the inter phase remains.
    intra, inter = Level(0.0, 1e12), Level(0.0, 10.0)
    size = 1e9
    hier = hierarchical_time(size, 2, 2, intra, inter)
    flat = ring_time("all_reduce", size, 2, 2, inter)
    # 2 x 2: a node sends 2(N-1)/N S = S against 2(n-1)/n S = 1.5 S (the hook's docstring).
    assert flat / hier == pytest.approx(1.5, rel=1e-6)
    # Worked by hand: intra 2 x (1 step x 1 us + S/2 / 100e3), inter 2 x 5 us + S / 10e3.
    assert hierarchical_time(size, 2, 2, Level(1.0, 100.0), Level(5.0, 10.0)) == \
        pytest.approx(2 * (1 + 5000) + 10 + 100000)


def test_missing_level_is_named() -> None:
    with pytest.raises(MissingLevel, match="intra"):
        hierarchical_time(1.0, 2, 2, None, Level(1.0, 1.0))


@pytest.mark.parametrize(("step", "bw"), [(-1.0, 1.0), (1.0, 0.0), (math.nan, 1.0),
                                          (1.0, math.inf)])
def test_level_rejects_nonsense(step: float, bw: float) -> None:
    with pytest.raises(ValueError):
        Level(step, bw)
