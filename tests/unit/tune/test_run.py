"""The sweep loop with a fake trial runner: rounds, failures, the budget, descent."""

from __future__ import annotations

from pathlib import Path

import pytest

from collscope.tune import run as run_module
from collscope.tune.analysis import Measurement
from collscope.tune.config import TuneConfig
from collscope.tune.run import Sweep
from collscope.tune.space import Library, build_space
from collscope.tune.trials import BenchArgs, Launcher

BENCH = BenchArgs(("all_reduce",), 1024, 4096, 4, 5, 1, "float", "gloo", 5.0)


def fake_runner(speed, fail=(), wall_s=1.0):
    """A run_trial stand-in: time = 100 / speed(config) (+ a per-round wobble); configurations
    whose values are in ``fail`` fail."""
    calls = []

    def run_trial(trial, launcher, bench, environ, directory, timeout_s):
        calls.append(trial)
        trial.wall_s = wall_s
        if set(trial.config.as_dict().values()) & set(fail):
            trial.status, trial.reason = "failed", "exit code 1"
            return trial
        wobble = (1.0, 1.02, 0.99, 1.01)[trial.round % 4]
        trial.status = "ok"
        trial.measurements = [Measurement("all_reduce", "float", size,
                                          100.0 * wobble / speed(trial.config.as_dict()), 2)
                              for size in (1024, 4096)]
        return trial
    return run_trial, calls


def sweep(monkeypatch, variables, runner, clock=None, **config):
    fake, calls = runner
    monkeypatch.setattr(run_module, "run_trial", fake)
    space = build_space(list(variables.items()), {}, Library())
    result = Sweep(TuneConfig(**config), space, Launcher("standalone"), BENCH, {}, Path("."))
    if clock:
        result.clock = clock
        result.__post_init__()
    result.run()
    return result, calls


def test_grid_runs_every_configuration_once_per_round_and_skips_failed_ones(monkeypatch):
    runner = fake_runner(lambda v: 2.0 if v["NCCL_ALGO"] == "Ring" else 1.0, fail=("Tree",))
    result, calls = sweep(monkeypatch, {"NCCL_ALGO": ["Ring", "Tree"]}, runner, rounds=3)
    labels = [t.config.label(result.space.baseline) for t in calls]
    # round 1: defaults, Ring, Tree (fails); rounds 2-3 rotate and leave Tree out
    assert labels == ["defaults", "NCCL_ALGO=Ring", "NCCL_ALGO=Tree", "NCCL_ALGO=Ring",
                      "defaults", "defaults", "NCCL_ALGO=Ring"]
    assert list(result.failed.values()) == ["exit code 1"] and result.stopped == ""


def test_a_failed_baseline_stops_the_sweep(monkeypatch):
    runner = fake_runner(lambda v: 1.0, fail=("b",))
    result, calls = sweep(monkeypatch, {"GLOO_SOCKET_IFNAME": ["b", "a"]}, runner, rounds=3)
    assert len(calls) == 1 and result.stopped.startswith("the baseline (defaults) failed")
    assert result.baseline_failed


def test_the_budget_stops_before_a_trial_that_would_end_past_it(monkeypatch):
    ticks = iter(range(0, 1000, 10))
    runner = fake_runner(lambda v: 1.0, wall_s=10.0)
    result, calls = sweep(monkeypatch, {"NCCL_ALGO": ["Ring", "Tree"]}, runner,
                          clock=lambda: float(next(ticks)), rounds=3, budget_s=35.0)
    # start at 0; checks at 10, 20, 30 s: 10 + 0 and 20 + 10 fit in 35 s, 30 + 10 does not
    assert len(calls) == 2
    assert result.stopped == "--budget 35 s reached after 2 trials"
    assert not result.baseline_failed


def test_descent_moves_to_the_faster_values(monkeypatch):
    gains = {"NCCL_ALGO": {None: 1.0, "Ring": 1.5, "Tree": 0.8},
             "NCCL_PROTO": {None: 1.0, "LL": 0.7, "LL128": 1.4, "Simple": 1.0},
             "NCCL_MIN_CTAS": {None: 1.0, "8": 1.0, "16": 1.3, "32": 0.9}}

    def speed(values):
        product = 1.0
        for name, value in values.items():
            product *= gains[name][value]
        return product

    result, calls = sweep(monkeypatch, {"NCCL_ALGO": ["Ring", "Tree"],
                                        "NCCL_PROTO": ["LL", "LL128", "Simple"],
                                        "NCCL_MIN_CTAS": ["8", "16", "32"]},
                          fake_runner(speed), rounds=2)
    assert result.strategy == "descent"
    best = max({t.config for t in calls}, key=lambda c: speed(c.as_dict()))
    assert best.as_dict() == {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128", "NCCL_MIN_CTAS": "16"}
    assert len({t.config for t in calls}) < result.space.grid_size


@pytest.mark.parametrize("rounds", [1, 2])
def test_rounds_are_paired_by_stage_and_round(monkeypatch, rounds):
    result, calls = sweep(monkeypatch, {"NCCL_ALGO": ["Ring"]}, fake_runner(lambda v: 1.0),
                          rounds=rounds)
    assert sorted(t.pair_key for t in calls) == sorted([(0, r) for r in range(rounds)] * 2)
