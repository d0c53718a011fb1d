"""The round scheduler and the grid / coordinate-descent planner."""

from __future__ import annotations

import itertools

import pytest

from collscope.tune.plan import Descent, choose_strategy, descent_candidates, rounds_order
from collscope.tune.space import Library, build_space


def test_rounds_rotate_so_every_configuration_takes_every_position():
    order = rounds_order(["A", "B", "C"], 4)
    assert order == [["A", "B", "C"], ["B", "C", "A"], ["C", "A", "B"], ["A", "B", "C"]]
    for round_ in order:
        assert sorted(round_) == ["A", "B", "C"]
    for position in range(3):
        assert {order[r][position] for r in range(3)} == {"A", "B", "C"}


def space_of(**variables):
    return build_space([(name, values) for name, values in variables.items()], {}, Library())


def test_auto_strategy_is_the_grid_up_to_sixteen_configurations():
    small = space_of(NCCL_ALGO=["Ring", "Tree"], NCCL_PROTO=["LL", "LL128", "Simple"])
    large = space_of(NCCL_ALGO=["Ring", "Tree"], NCCL_PROTO=["LL", "LL128", "Simple"],
                     NCCL_MIN_CTAS=["8", "16", "32"])
    assert small.grid_size == 7 and choose_strategy("auto", small) == "grid"
    assert large.grid_size == 19 and choose_strategy("auto", large) == "descent"
    assert choose_strategy("grid", large) == "grid"


def test_descent_candidates_vary_one_variable_from_the_current_point():
    space = space_of(NCCL_ALGO=["Ring", "Tree"], NCCL_PROTO=["LL", "Simple"])
    current = space.baseline.with_value("NCCL_ALGO", "Tree")
    configs = descent_candidates(space, current, "NCCL_PROTO")
    assert configs[0] == space.baseline and configs[1] == current
    assert [c.as_dict() for c in configs[2:]] == [{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"},
                                                  {"NCCL_ALGO": "Tree", "NCCL_PROTO": "Simple"}]


def run_descent(space, objective, max_stages=50):
    """Drive Descent with a synthetic speed-up (higher is better); stages measured, result."""
    descent = Descent(space)
    stages = []
    while (step := descent.next_stage()) is not None and len(stages) < max_stages:
        variable, configs = step
        stages.append((variable, configs))
        descent.record(variable, {c: objective(c.as_dict()) for c in configs})
    return stages, descent


GAINS = {"NCCL_ALGO": {None: 1.0, "Ring": 1.1, "Tree": 0.9},
         "NCCL_PROTO": {None: 1.0, "LL": 0.8, "LL128": 1.3, "Simple": 1.05},
         "NCCL_MIN_CTAS": {None: 1.0, "8": 0.95, "16": 1.02, "32": 1.2}}


def separable(values):
    product = 1.0
    for name, value in values.items():
        product *= GAINS[name][value]
    return product


def test_descent_finds_the_optimum_of_a_separable_objective_and_stops():
    space = space_of(NCCL_ALGO=["Ring", "Tree"], NCCL_PROTO=["LL", "LL128", "Simple"],
                     NCCL_MIN_CTAS=["8", "16", "32"])
    stages, descent = run_descent(space, separable)
    best = max((dict(zip(space.names, combo)) for combo in itertools.product(
        *(values for _, values in space.variables))), key=separable)
    assert descent.current.as_dict() == best == {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128",
                                                 "NCCL_MIN_CTAS": "32"}
    assert descent.done
    # a pass that moves on every variable, then the other variables once more without a move
    # (the last one moved needs no second look)
    assert [v for v, _ in stages] == ["NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_CTAS", "NCCL_ALGO",
                                      "NCCL_PROTO"]
    assert all(stage[0] == space.baseline for _, stage in stages)   # paired ratios everywhere
    measured = {c for _, stage in stages for c in stage}
    assert len(measured) < space.grid_size                          # cheaper than the grid


def test_descent_stays_at_the_defaults_when_nothing_helps():
    space = space_of(NCCL_ALGO=["Ring", "Tree"], NCCL_PROTO=["LL", "Simple"])
    stages, descent = run_descent(space, lambda values: 1.0 if values == {
        "NCCL_ALGO": None, "NCCL_PROTO": None} else 0.9)
    assert descent.current == space.baseline and descent.moves == []
    assert len(stages) == 2


@pytest.mark.parametrize("failed", ["Ring", "Tree"])
def test_descent_ignores_configurations_that_failed(failed):
    space = space_of(NCCL_ALGO=["Ring", "Tree"])
    descent = Descent(space)
    variable, configs = descent.next_stage()
    scores = {c: 2.0 for c in configs if c.as_dict()["NCCL_ALGO"] not in (failed,)}
    descent.record(variable, scores)
    assert descent.current.as_dict()["NCCL_ALGO"] != failed
