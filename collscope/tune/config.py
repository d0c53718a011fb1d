"""`collscope tune` configuration: one typed dataclass, validated on construction (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from collscope.config_flags import flag, invalid
from collscope.tune.plan import STRATEGIES


def _percent(value: float) -> float:
    return value / 100


@dataclass
class TuneConfig:
    rounds: int = flag(3, "--rounds", type=int,
                       help="interleaved rounds per configuration")
    budget_s: float | None = flag(None, "--budget", type=float, metavar="S",
                                  help="seconds the sweep may take (no trial starts that would "
                                       "end later)")
    timeout_s: float = flag(300.0, "--timeout", type=float, metavar="S",
                            help="seconds one trial may take before it is killed and recorded "
                                 "failed; bench's collective timeout is half of it")
    strategy: str = flag("auto", "--strategy", show_default=False,
                         help="auto (grid up to 16 configurations, else descent), grid, "
                              "descent")
    confidence: float = flag(0.95, "--confidence", type=float,
                             help="confidence level of the speed-up intervals")
    min_gain: float = flag(0.02, "--min-gain", type=float, metavar="PCT", to_field=_percent,
                           shown="2", help="faster only when the whole interval lies above "
                                           "1 + PCT%")

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise invalid(self, "rounds", f"{self.rounds} must be >= 1 (>= 2 for an interval)")
        if self.budget_s is not None and self.budget_s <= 0:
            raise invalid(self, "budget_s", f"{self.budget_s} must be > 0 seconds")
        if self.timeout_s <= 0:
            raise invalid(self, "timeout_s", f"{self.timeout_s} must be > 0 seconds")
        if self.strategy not in STRATEGIES:
            raise invalid(self, "strategy", f"'{self.strategy}' is not accepted; use "
                                            f"{', '.join(STRATEGIES)}")
        if not 0 <= self.min_gain < 1:
            raise invalid(self, "min_gain", f"{self.min_gain * 100:g}% must be in [0, 100), "
                                            "e.g. 2 for 2%")
        if not 0.5 <= self.confidence < 1:
            raise invalid(self, "confidence", f"{self.confidence} must be in [0.5, 1), e.g. 0.95")

    @property
    def collective_timeout_s(self) -> float:
        """Bench's own collective timeout: half the trial's, so the ranks of a hung trial
        exit by themselves (naming the rank) before tune kills the job."""
        return max(1.0, self.timeout_s / 2)
