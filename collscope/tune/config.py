"""`collscope tune` configuration: one typed dataclass, validated on construction (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.errors import UsageError
from collscope.tune.plan import STRATEGIES


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class TuneConfig:
    rounds: int = field(default=3, metadata=_help(
        "interleaved rounds per configuration (>= 2 for a confidence interval)"))
    budget_s: float | None = field(default=None, metadata=_help(
        "seconds the whole sweep may take; no trial starts that would end past it"))
    timeout_s: float = field(default=300.0, metadata=_help(
        "seconds one trial may take before it is killed and recorded failed"))
    strategy: str = field(default="auto", metadata=_help(
        "auto (grid up to 16 configurations, else descent), grid or descent"))
    confidence: float = field(default=0.95, metadata=_help("confidence level of the intervals"))
    min_gain: float = field(default=0.02, metadata=_help(
        "a configuration is faster only when its whole interval lies above 1 + this"))

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise UsageError(f"--rounds: {self.rounds} must be >= 1 (>= 2 for an interval)")
        if self.budget_s is not None and self.budget_s <= 0:
            raise UsageError(f"--budget: {self.budget_s} must be > 0 seconds")
        if self.timeout_s <= 0:
            raise UsageError(f"--timeout: {self.timeout_s} must be > 0 seconds")
        if self.strategy not in STRATEGIES:
            raise UsageError(f"--strategy: '{self.strategy}' is not accepted; use "
                             f"{', '.join(STRATEGIES)}")
        if not 0 <= self.min_gain < 1:
            raise UsageError(f"--min-gain: {self.min_gain * 100:g}% must be in [0, 100), "
                             "e.g. 2 for 2%")
        if not 0.5 <= self.confidence < 1:
            raise UsageError(f"--confidence: {self.confidence} must be in [0.5, 1), e.g. 0.95")

    @property
    def collective_timeout_s(self) -> float:
        """Bench's own collective timeout: half the trial's, so the ranks of a hung trial
        exit by themselves (naming the rank) before tune kills the job."""
        return max(1.0, self.timeout_s / 2)
