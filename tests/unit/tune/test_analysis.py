"""Per-size speed-up intervals, verdicts, winners and size ranges, on hand-made trials."""

from __future__ import annotations

import math
import random

import pytest

from collscope.tune.analysis import (
    Interval,
    Trial,
    analyse,
    comparisons,
    score,
    significance,
    speedup_interval,
    verdict_of,
    winner_ranges,
)
from collscope.tune.space import Config
from tests.helpers import trials_from

T_975_1DF = 12.706204736          # Student t, 97.5th percentile, 1 degree of freedom (tables)
BASE = Config((("NCCL_ALGO", None),))
RING = Config((("NCCL_ALGO", "Ring"),))
TREE = Config((("NCCL_ALGO", "Tree"),))


def test_interval_of_identical_rounds_is_a_point():
    interval = speedup_interval([(200.0, 100.0), (300.0, 150.0)])
    assert interval == Interval(2.0, 2.0, 2.0, 2)


def test_interval_is_a_t_interval_on_the_mean_log_speed_up():
    interval = speedup_interval([(110.0, 100.0), (130.0, 100.0)])
    logs = [math.log(1.1), math.log(1.3)]
    mean = sum(logs) / 2
    half = T_975_1DF * (abs(logs[1] - logs[0]) / math.sqrt(2)) / math.sqrt(2)
    assert interval.ratio == pytest.approx(math.exp(mean))          # 1.1958
    assert interval.low == pytest.approx(math.exp(mean - half), rel=1e-6)     # 0.4138
    assert interval.high == pytest.approx(math.exp(mean + half), rel=1e-6)    # 3.456
    assert interval.rounds == 2


def test_one_round_gives_no_interval():
    interval = speedup_interval([(120.0, 100.0)])
    assert interval.ratio == pytest.approx(1.2) and interval.low is None
    assert verdict_of(interval) == "too few rounds"


@pytest.mark.parametrize("low, high, gain, verdict", [
    (1.01, 1.2, 0.0, "faster"), (1.01, 1.2, 0.02, "within noise"), (1.03, 1.2, 0.02, "faster"),
    (0.9, 1.1, 0.0, "within noise"), (0.8, 0.99, 0.02, "slower"),
])
def test_verdicts(low, high, gain, verdict):
    assert verdict_of(Interval(1.0, low, high, 3), gain) == verdict


def test_analyse_pairs_by_round_and_marks_per_size_winners():
    # Ring is 2x faster at 1 MiB in every round but equal at 1 KiB; Tree is slower at 1 MiB.
    trials = trials_from({
        BASE: [{1024: 10.0, 1 << 20: 200.0}, {1024: 12.0, 1 << 20: 260.0},
               {1024: 11.0, 1 << 20: 220.0}],
        RING: [{1024: 10.5, 1 << 20: 100.0}, {1024: 11.0, 1 << 20: 131.0},
               {1024: 11.5, 1 << 20: 109.0}],
        TREE: [{1024: 10.0, 1 << 20: 400.0}, {1024: 12.0, 1 << 20: 530.0},
               {1024: 11.0, 1 << 20: 441.0}],
    })
    rows = {(r.config, r.size_bytes): r for r in analyse(trials, BASE)}
    ring_big = rows[(RING, 1 << 20)]
    assert ring_big.verdict == "faster" and ring_big.winner
    assert ring_big.interval.ratio == pytest.approx(
        math.exp((math.log(2) + math.log(260 / 131) + math.log(220 / 109)) / 3))
    assert ring_big.time_us == 109.0                                   # median of 100/131/109
    # busbw = size / time x 2(n-1)/n on 4 ranks (nccl-tests)
    assert ring_big.busbw_gbs == pytest.approx((1 << 20) / 109e-6 / 1e9 * 1.5)
    assert rows[(TREE, 1 << 20)].verdict == "slower"
    assert rows[(RING, 1024)].verdict == "within noise"
    assert rows[(BASE, 1024)].winner and not rows[(BASE, 1 << 20)].winner
    assert rows[(BASE, 1024)].verdict == "baseline" and rows[(BASE, 1024)].interval is None
    assert score(list(rows.values()), RING) > 1.3 > 1.0 > score(list(rows.values()), TREE)


def test_failed_configurations_have_no_rows():
    trials = trials_from({BASE: [{1024: 10.0}, {1024: 11.0}],
                          RING: [{1024: 5.0}, {1024: 5.5}]}, failed={RING})
    rows = analyse(trials, BASE)
    assert {r.config for r in rows} == {BASE}


def test_winner_ranges_group_consecutive_sizes_with_the_same_winner():
    sizes = [1024, 4096, 16384, 65536]
    # Tree wins the two small sizes, Ring the two large ones
    base = [{s: 100.0 for s in sizes}, {s: 104.0 for s in sizes}, {s: 98.0 for s in sizes}]
    ring = [{1024: 100.0, 4096: 101.0, 16384: 50.0, 65536: 40.0},
            {1024: 103.0, 4096: 104.0, 16384: 53.0, 65536: 41.0},
            {1024: 99.0, 4096: 97.0, 16384: 50.0, 65536: 39.0}]
    tree = [{1024: 60.0, 4096: 61.0, 16384: 99.0, 65536: 100.0},
            {1024: 62.0, 4096: 63.0, 16384: 104.0, 65536: 105.0},
            {1024: 58.0, 4096: 59.0, 16384: 97.0, 65536: 99.0}]
    ranges = winner_ranges(analyse(trials_from({BASE: base, RING: ring, TREE: tree}), BASE))
    assert [(r.config, r.sizes) for r in ranges] == [(TREE, (1024, 4096)),
                                                     (RING, (16384, 65536))]


def null_sweep(seed: int, configs: int = 10, sizes: int = 11, rounds: int = 3,
               noise: float = 0.05) -> list[Trial]:
    """Every configuration is the baseline in disguise: times differ by lognormal noise only."""
    rng = random.Random(seed)
    grid = [BASE, *(Config((("NCCL_ALGO", f"v{i}"),)) for i in range(configs))]
    return trials_from({config: [{1024 << (2 * s): 100.0 * math.exp(rng.gauss(0.0, noise))
                                  for s in range(sizes)} for _ in range(rounds)]
                        for config in grid})


def test_a_null_sweep_names_no_winner_at_the_family_wise_level():
    # 10 configurations x 11 sizes x 3 rounds of pure noise: uncorrected 95% intervals named a
    # false winner in ~45% of sweeps; Bonferroni over the m = 110 comparisons keeps the chance
    # that any interval misses (one side of it: a false "faster") under 5%.
    runs = 200
    false_winners = sum(any(r.winner and r.config != BASE for r in analyse(null_sweep(seed), BASE))
                        for seed in range(runs))
    assert false_winners <= 0.05 * runs, false_winners


def test_intervals_are_bonferroni_corrected_over_configurations_and_sizes():
    rows = analyse(null_sweep(7, configs=4, sizes=5), BASE, confidence=0.9)
    assert comparisons(rows) == 20
    levels = [r.interval.confidence for r in rows if r.interval is not None]
    assert len(levels) == 20 and levels == pytest.approx([1 - 0.1 / 20] * 20)    # 0.995
    first = next(r for r in rows if r.interval is not None)
    trials = null_sweep(7, configs=4, sizes=5)
    pairs = [(b.measurements[0].time_us, t.measurements[0].time_us)
             for b, t in zip(trials[0::5], trials[1::5])]                # BASE vs v0 at 1 KiB
    assert first.interval == speedup_interval(pairs, 0.995)
    assert "90% family-wise, each interval at 99.5% (Bonferroni" in significance(rows, 0.9)
    assert "m = 20)" in significance(rows, 0.9)
