"""The sweep: stages of interleaved rounds, one fresh bench job per trial, within the budget.

A configuration that fails (hangs, crashes, or gives #wrong > 0) is recorded with the reason,
never run again and never recommended; the sweep goes on. A failed baseline ends the sweep,
since every ratio is taken against it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from collscope.tune import plan
from collscope.tune.analysis import Trial, analyse, score
from collscope.tune.config import TuneConfig
from collscope.tune.space import Config, Space
from collscope.tune.trials import BenchArgs, Launcher, run_trial


@dataclass
class Sweep:
    config: TuneConfig
    space: Space
    launcher: Launcher
    bench: BenchArgs
    environ: Mapping[str, str]
    directory: Path
    on_trial: Callable[[Trial], None] = lambda _trial: None
    trials: list[Trial] = field(default_factory=list)
    stopped: str = ""                 # why the sweep ended early ("" = it completed)
    baseline_failed: bool = False     # it ended because the baseline failed (exit code 1)
    strategy: str = ""
    clock: Callable[[], float] = time.monotonic
    _started: float = 0.0

    def __post_init__(self) -> None:
        self._started = self.clock()

    @property
    def failed(self) -> dict[Config, str]:
        return {t.config: t.reason for t in self.trials if t.status == "failed"}

    def run(self) -> list[Trial]:
        self.strategy = plan.choose_strategy(self.config.strategy, self.space)
        if self.strategy == "grid":
            self._stage(self.space.grid(), 0)
            return self.trials
        descent = plan.Descent(self.space)
        stage = 0
        while (step := descent.next_stage()) is not None:
            variable, configs = step
            if not self._stage(configs, stage):
                break
            rows = analyse(self.trials, self.space.baseline, self.config.confidence,
                           self.config.min_gain)
            scores = {c: s for c in configs if c not in self.failed
                      and (s := score(rows, c)) is not None}
            descent.record(variable, scores)
            stage += 1
        return self.trials

    def _stage(self, configs: list[Config], stage: int) -> bool:
        """Measure ``configs`` in interleaved rounds; False when the sweep must stop."""
        for round_, order in enumerate(plan.rounds_order(configs, self.config.rounds)):
            for position, config in enumerate(order):
                if config in self.failed:
                    continue
                if not self._budget_allows():
                    self.stopped = (f"--budget {self.config.budget_s:g} s reached after "
                                    f"{len(self.trials)} trials")
                    return False
                trial = Trial(len(self.trials), stage, round_, position, config)
                run_trial(trial, self.launcher, self.bench, self.environ, self.directory,
                          self.config.timeout_s)
                self.trials.append(trial)
                self.on_trial(trial)
                if trial.status == "failed" and config == self.space.baseline:
                    self.baseline_failed = True
                    self.stopped = (f"the baseline (defaults) failed: {trial.reason}; nothing "
                                    "can be compared with it")
                    return False
        return True

    def _budget_allows(self) -> bool:
        if self.config.budget_s is None:
            return True
        elapsed = self.clock() - self._started
        done = [t.wall_s for t in self.trials]
        estimate = sum(done) / len(done) if done else 0.0
        return elapsed + estimate <= self.config.budget_s
