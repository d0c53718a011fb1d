"""`collscope tune` from its config: the space and the trials' bench command settled first
(bad input exits 2 before any trial), then the printed commands, the merge of trials run by
hand, or the sweep; then the records, the table and the hand-over files, and the exit code.

Exit code: 0 when the sweep ran (whether or not something beat the defaults), 1 when the
baseline failed or no trial succeeded (UsageError, exit 2, for bad input).
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collscope import __version__
from collscope.errors import ExitCode, UsageError
from collscope.tune.analysis import CI_METHOD, Trial, analyse, significance
from collscope.tune.config import TuneConfig
from collscope.tune.records import TrialWriter, sweep_context
from collscope.tune.space import Library, Space
from collscope.tune.trials import BenchArgs, Launcher


@dataclass(frozen=True)
class Plan:
    """What every trial shares: the space, the bench command, the launcher, the library."""

    space: Space
    bench: BenchArgs
    launcher: Launcher
    library: Library


def prepare(config: TuneConfig, environ: Mapping[str, str]) -> Plan:
    """The sweep's space, bench command and launcher from ``config``; UsageError on anything
    wrong."""
    from collscope.bench.config import BenchConfig
    from collscope.tune.space import build_space, parse_assignment, preset_assignments
    from collscope.tune.trials import choose_launcher

    bench = BenchConfig(
        collectives=config.collectives or ["all_reduce"], min_bytes=config.min_bytes,
        max_bytes=config.max_bytes, step_factor=config.step_factor, iters=config.iters,
        warmup_iters=config.warmup_iters, dtypes=[config.dtype], out_of_place=False,
        backend=config.backend, timeout_s=config.collective_timeout_s)
    if len(bench.dtypes) != 1:
        raise UsageError(f"-d/--dtype: tune measures one dtype per sweep; got "
                         f"{', '.join(bench.dtypes)}")
    library = installed_library(config.backend)
    assignments = [parse_assignment(text, "--space") for text in config.space]
    for name in config.preset:
        assignments += preset_assignments(name, library)
    space = build_space(assignments, environ, library)
    bench_args = BenchArgs(tuple(bench.collectives), bench.min_bytes, bench.max_bytes,
                           bench.step_factor, bench.iters, bench.warmup_iters, bench.dtypes[0],
                           config.backend, config.collective_timeout_s)
    return Plan(space, bench_args, choose_launcher(config.launch, config.nproc, environ),
                library)


def installed_library(backend: str) -> Library:
    """The communication library the trials will load (RCCL or NCCL, with its version)."""
    from collscope.tune.space import Version
    from collscope.versions import version_tuple

    if backend == "gloo":
        return Library()
    from collscope.runtime.dist import library_versions

    versions = library_versions()
    for name in ("rccl", "nccl"):
        if versions.get(name):
            found: Version | None = version_tuple(versions[name])
            return Library(name, found)
    return Library()


def run(config: TuneConfig, environ: Mapping[str, str]) -> int:
    """The whole command; its exit code."""
    from collscope.records.jsonl import check_writable, check_writable_folder

    plan = prepare(config, environ)
    if config.print_commands:
        print_commands(plan, config)
        return ExitCode.OK
    for flag, path in (("--env-out", config.env_out), ("--tuner-csv", config.tuner_csv)):
        check_writable(flag, path)     # written at the end: refused before the sweep, not after
    if config.merge:
        from collscope.tune.trials import merge_trials

        unusable: list[str] = []
        trials = merge_trials(config.merge, plan.space.grid(), unusable)
        for warning in unusable:       # malformed lines are said, never dropped silently
            sys.stderr.write(f"collscope tune: {warning}\n")
        return conclude(trials, plan, config, f"merged from {len(config.merge)} file(s)",
                        stopped="", baseline_failed=False)
    check_writable_folder("--trials-dir", config.trials_dir)   # the trials write there
    return sweep(plan, config, environ)


def print_commands(plan: Plan, config: TuneConfig) -> None:
    """The grid's trials as command lines to run by hand, round by round, then merge."""
    from collscope.tune.plan import rounds_order
    from collscope.tune.trials import printed_command

    directory = Path(config.trials_dir or "tune-trials")
    configs = plan.space.grid()
    print(f"# collscope tune: {len(configs)} configurations x {config.rounds} rounds, order "
          "rotated each round; run them in this order, then:")
    again = [*(w for s in config.space for w in ("--space", s)),
             *(w for p in config.preset for w in ("--preset", p))]
    print(f"#   collscope tune {shlex.join(again)} --merge {shlex.quote(str(directory))}/*.jsonl")
    print(f"# baseline: {'; '.join(plan.space.baseline_notes)}")
    index = 0
    for round_, order in enumerate(rounds_order(configs, config.rounds)):
        print(f"# round {round_ + 1}")
        for position, cfg in enumerate(order):
            trial = Trial(index, 0, round_, position, cfg)
            path = directory / f"r{round_ + 1}-c{configs.index(cfg)}.jsonl"
            print(printed_command(plan.launcher, plan.bench, trial, path))
            index += 1


def sweep(plan: Plan, config: TuneConfig, environ: Mapping[str, str]) -> int:
    """Run the trials (progress on stderr, records as each trial ends), then conclude."""
    from collscope.tune.run import Sweep

    space, launcher = plan.space, plan.launcher
    if config.trials_dir:
        directory = Path(config.trials_dir)
        directory.mkdir(parents=True, exist_ok=True)
        holder = None
    else:
        holder = tempfile.TemporaryDirectory(prefix="collscope-tune-", dir=".")
        directory = Path(holder.name)
    writer = (TrialWriter(config.json, sweep_context(space, config, launcher.describe()),
                          keep_files=bool(config.trials_dir)) if config.json else None)
    sys.stderr.write(f"collscope tune: {len(space.grid())} configuration(s) in the grid, "
                     f"{config.rounds} round(s), trials: {launcher.describe()}\n")

    def progress(trial: Trial) -> None:
        sys.stderr.write(f"  trial {trial.index + 1} (round {trial.round + 1}) "
                         f"{trial.config.label(space.baseline)}: {trial.status}"
                         f"{' - ' + trial.reason if trial.reason else ''} "
                         f"[{trial.wall_s:.1f} s]\n")
        if writer:
            writer.trial(trial, space.baseline)

    try:
        swept = Sweep(config, space, launcher, plan.bench, dict(environ), directory,
                      on_trial=progress)
        trials = swept.run()
    finally:
        if holder is not None:
            holder.cleanup()
    how = f"{swept.strategy}, trials via {launcher.describe()}"
    return conclude(trials, plan, config, how, swept.stopped, swept.baseline_failed, writer)


def conclude(trials: list[Trial], plan: Plan, config: TuneConfig, how: str, stopped: str,
             baseline_failed: bool, writer: TrialWriter | None = None) -> int:
    """Judge the trials; write the records, the table and the hand-over files; the exit
    code (1: the baseline failed or no trial succeeded)."""
    from collscope.tune import handover
    from collscope.tune.report import render

    space = plan.space
    rows = analyse(trials, space.baseline, config.confidence, config.min_gain)
    failed = {t.config: t.reason for t in trials if t.status == "failed"}
    context: dict[str, Any] = next(
        (t.context for t in trials if t.status == "ok" and t.context), {})
    if writer is None and config.json:
        writer = TrialWriter(config.json, sweep_context(space, config, how))
        for trial in trials:
            writer.trial(trial, space.baseline)
    if writer:
        writer.run_record(context)
        for record in handover.tune_records(rows, space.baseline, failed, config.confidence):
            writer.out.write(record)
        writer.out.close()
    to_stdout = config.json == "-"          # then stdout carries the records and nothing else
    if not to_stdout:
        render(rows, failed, space, config, how, stopped, CI_METHOD)
    header = [f"collscope tune {__version__}: {how}",
              "baseline: " + "; ".join(space.baseline_notes),
              f"significance: {CI_METHOD}; {significance(rows, config.confidence)}; "
              f"faster = interval above {1 + config.min_gain:g}"]
    if config.env_out:
        _write(config.env_out, "--env-out", handover.env_lines(rows, space.baseline, header),
               to_stdout)
    if config.tuner_csv:
        _write(config.tuner_csv, "--tuner-csv", handover.tuner_csv(
            rows, space.baseline, int(context.get("nodes") or -1),
            int(context.get("world_size") or -1), plan.library.name), to_stdout)
    ok = any(t.status == "ok" for t in trials)
    return ExitCode.FOUND if baseline_failed or not ok else ExitCode.OK


def _write(path: str, flag: str, lines: list[str], json_on_stdout: bool) -> None:
    try:
        Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{flag}: cannot write {path} ({error.strerror})") from None
    print(f"wrote {path}", file=sys.stderr if json_on_stdout else sys.stdout)
