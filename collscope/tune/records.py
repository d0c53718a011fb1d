"""`collscope tune --json`: the run record (written once a trial says where it ran), one
tune_trial record per trial as it ends, then the tune records; and what the run record's
``extra`` says about the sweep."""

from __future__ import annotations

import time
from typing import Any

from collscope.tune.analysis import Trial
from collscope.tune.config import TuneConfig
from collscope.tune.space import Config, Space

# The settings of the sweep itself the run record's extra.config holds (the bench command,
# space and outputs are in its argv and extra.space).
RECORDED_SETTINGS = ("rounds", "budget_s", "timeout_s", "strategy", "confidence", "min_gain")


def sweep_context(space: Space, config: TuneConfig, how: str) -> dict[str, Any]:
    """What the run record's ``extra`` says about the sweep (the trials' own context is the
    rest of the record)."""
    from collscope.tune.analysis import CI_METHOD, CORRECTION, TIME_METHOD

    return {"space": {name: list(values) for name, values in space.variables},
            "baseline": space.baseline.as_dict(), "baseline_notes": list(space.baseline_notes),
            "config": {name: getattr(config, name) for name in RECORDED_SETTINGS},
            "trials": how, "ci_method": CI_METHOD,
            "correction": CORRECTION, "time_method": TIME_METHOD}


class TrialWriter:
    """The --json file: the run record (once a trial says where it ran; trial records that
    end before that wait for it), then one tune_trial record per trial as it ends, then the
    tune records."""

    def __init__(self, path: str, extra: dict[str, Any], keep_files: bool = True):
        from collscope.records.jsonl import JsonlWriter

        self.keep_files = keep_files     # trial files in a temporary folder are gone after
        self.extra = extra
        self.started_at = time.time()
        self.pending: list[dict[str, Any]] = []
        self.out = JsonlWriter(path, "--json")      # UsageError (exit 2) when it cannot open
        self.run_written = False

    def run_record(self, context: dict[str, Any]) -> None:
        from collscope.records.run import RunRecord

        if self.run_written:
            return
        self.run_written = True
        self.out.write(RunRecord.create(
            "tune", launcher=str(context.get("launcher", "unknown")),
            backend=str(context.get("backend", "unknown")),
            world_size=int(context.get("world_size") or 0), nodes=int(context.get("nodes") or 0),
            ranks_per_node=int(context.get("ranks_per_node") or 0),
            hosts=list(context.get("hosts") or []), devices=list(context.get("devices") or []),
            versions=dict(context.get("versions") or {}),
            timing=str(context.get("timing", "")), started_at=self.started_at,
            extra=self.extra).to_dict())
        for record in self.pending:
            self.out.write(record)
        self.pending = []

    def trial(self, trial: Trial, baseline: Config) -> None:
        from collscope.records.tune import TuneTrialRecord

        assert trial.status != "pending", "a trial is recorded once it has ended"
        record = TuneTrialRecord(
            trial.index, trial.stage, trial.round, trial.position, trial.config.as_dict(),
            trial.config.label(baseline), trial.status, trial.reason, trial.wall_s,
            trial.file if self.keep_files else None,
            [{"collective": m.collective, "dtype": m.dtype, "size_bytes": m.size_bytes,
              "time_us": m.time_us} for m in trial.measurements]).to_dict()
        if trial.context:
            self.run_record(trial.context)
        if self.run_written:
            self.out.write(record)
        else:
            self.pending.append(record)
