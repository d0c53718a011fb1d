"""`collscope tune` configuration: one typed dataclass, the one source of every tune flag,
validated on construction (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.config_flags import (
    BACKEND_HELP,
    ConfigError,
    backend_flag,
    check_choice,
    flag,
    invalid,
    json_flag,
    list_flag,
)
from collscope.tune.plan import STRATEGIES
from collscope.units import parse_size


def _percent(value: float) -> float:
    return value / 100


@dataclass
class TuneConfig:
    collectives: list[str] = field(default_factory=lambda: ["all_reduce"])  # COLLECTIVE...
    space: list[str] = list_flag("--space", action="append", metavar="NAME=V1,V2",
                                 help="a variable and the values to try (repeatable)")
    preset: list[str] = list_flag("--preset", action="append", metavar="NAME",
                                  help="a documented grid: rccl-basic, nccl-basic")
    min_bytes: int = flag(1024, "-b", "--min-bytes", parse=parse_size, shown="1K",
                          help="smallest size")
    max_bytes: int | None = flag(None, "-e", "--max-bytes", parse=parse_size,
                                 help="largest size (default: bench's)")
    step_factor: int = flag(4, "-f", "--step-factor", type=int,
                            help="multiply the size by this each step")
    iters: int = flag(20, "-n", "--iters", type=int, help="timed iterations")
    warmup_iters: int = flag(5, "-w", "--warmup-iters", type=int,
                             help="warm-up iterations per size")
    dtype: str = flag("float", "-d", "--dtype", help="data type")
    rounds: int = flag(3, "--rounds", type=int,
                       help="interleaved rounds per configuration")
    budget_s: float | None = flag(None, "--budget", type=float, metavar="S",
                                  help="seconds the sweep may take (no trial starts that would "
                                       "end later)")
    strategy: str = flag("auto", "--strategy", show_default=False,
                         help="auto (grid up to 16 configurations, else descent), grid, "
                              "descent")
    confidence: float = flag(0.95, "--confidence", type=float,
                             help="confidence level of the speed-up intervals")
    min_gain: float = flag(0.02, "--min-gain", type=float, metavar="PCT", to_field=_percent,
                           shown="2", help="faster only when the whole interval lies above "
                                           "1 + PCT%")
    timeout_s: float = flag(300.0, "--timeout", type=float, metavar="S",
                            help="seconds one trial may take before it is killed and recorded "
                                 "failed; bench's collective timeout is half of it")
    nproc: int | None = flag(None, "--nproc", type=int,
                             help="local ranks per trial (standalone; default: bench's)")
    backend: str = backend_flag("bench's --backend: " + BACKEND_HELP)
    launch: str | None = flag(None, "--launch", metavar="TEMPLATE",
                              help="launcher command with {cmd} where the bench command goes")
    print_commands: bool = flag(False, "--print-commands",
                                help="print the grid's trial commands instead of running them")
    merge: list[str] = list_flag("--merge", nargs="+", metavar="FILE",
                                 help="judge bench JSON Lines files of trials run by hand")
    trials_dir: str | None = flag(None, "--trials-dir", metavar="DIR",
                                  help="keep every trial's JSON Lines and log here (default: a "
                                       "temporary folder, removed; under Slurm or --launch it "
                                       "must be shared by rank 0)")
    json: str | None = json_flag("write JSON Lines: tune_trial and tune records ('-': to "
                                 "stdout instead of the table)")
    env_out: str | None = flag(None, "--env-out", metavar="FILE",
                               help="write the winners as bash export lines")
    tuner_csv: str | None = flag(None, "--tuner-csv", metavar="FILE",
                                 help="write an NCCL example-tuner-plugin CSV "
                                      "(NCCL_TUNER_CONFIG_FILE)")

    def __post_init__(self) -> None:
        if self.print_commands and self.merge:
            raise ConfigError("merge", "use one (print, run by hand, then merge)",
                              "--print-commands/--merge")
        if self.rounds < 1:
            raise invalid(self, "rounds", f"{self.rounds} must be >= 1 (>= 2 for an interval)")
        if self.budget_s is not None and self.budget_s <= 0:
            raise invalid(self, "budget_s", f"{self.budget_s} must be > 0 seconds")
        if self.timeout_s <= 0:
            raise invalid(self, "timeout_s", f"{self.timeout_s} must be > 0 seconds")
        check_choice(self, "strategy", STRATEGIES)
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
