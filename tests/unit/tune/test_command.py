"""The exit code of a tune run follows from what happened, not from the words said about it."""

from __future__ import annotations

import pytest

from collscope.tune.analysis import Measurement, Trial
from collscope.tune.command import Plan, conclude
from collscope.tune.config import TuneConfig
from collscope.tune.space import Library, build_space
from collscope.tune.trials import BenchArgs, Launcher

BENCH = BenchArgs(("all_reduce",), 1024, 1024, 4, 5, 1, "float", "gloo", 5.0)


def _trials(status: str) -> tuple[Plan, list[Trial]]:
    space = build_space([("NCCL_ALGO", ["Ring"])], {}, Library())
    trials = []
    for index, config in enumerate(space.grid()):
        trial = Trial(index, 0, 0, index, config, status=status)
        if status == "ok":
            trial.measurements = [Measurement("all_reduce", "float", 1024, 10.0, 2)]
        trials.append(trial)
    return Plan(space, BENCH, Launcher("standalone"), Library()), trials


@pytest.mark.parametrize("status, stopped, baseline_failed, code", [
    ("ok", "", False, 0),
    ("ok", "the baseline of another wording", False, 0),    # the words decide nothing
    ("ok", "--budget 10 s reached after 2 trials", False, 0),
    ("ok", "worded any way at all", True, 1),
    ("failed", "", False, 1),                                # no trial succeeded
])
def test_exit_code(capsys, status, stopped, baseline_failed, code):
    plan, trials = _trials(status)
    assert conclude(trials, plan, TuneConfig(), "grid", stopped, baseline_failed) == code
