"""`collscope tune`: sweep RCCL/NCCL settings in fresh bench jobs, judge them, hand them over."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collscope import __version__
from collscope.cli._common import add_collectives_argument, check_writable, check_writable_folder
from collscope.config_flags import add_flags, config_from
from collscope.errors import UsageError
from collscope.tune.config import TuneConfig

if TYPE_CHECKING:      # annotations only: the CLI imports its library lazily
    from collscope.tune.analysis import Trial
    from collscope.tune.records import TrialWriter
    from collscope.tune.space import Library, Space
    from collscope.tune.trials import BenchArgs, Launcher

EXAMPLES = """\
examples:
  collscope tune --preset rccl-basic -b 1M -e 1G          # 8 local GPUs, one bench job per trial
  collscope tune --space NCCL_PROTO=LL,LL128,Simple --space NCCL_MIN_NCHANNELS=32,64 \\
                 --rounds 5 --json tune.jsonl --env-out best.env --tuner-csv tuner.conf
  salloc -N2 --ntasks-per-node 8 --gpus-per-node 8 \\
      collscope tune all_reduce all_gather --preset nccl-basic --budget 1800   # trials via srun
  collscope tune --launch 'mpirun -np 16 -hostfile hosts -x NCCL_ALGO -x NCCL_PROTO {cmd}' \\
                 --space NCCL_ALGO=Ring,Tree --space NCCL_PROTO=LL128,Simple
  collscope tune --space NCCL_ALGO=Ring,Tree --print-commands --trials-dir runs/  # run by hand
  collscope tune --space NCCL_ALGO=Ring,Tree --merge runs/*.jsonl --env-out best.env

Each trial is a fresh `python -m collscope bench ... --in-place --json FILE` job with the
configuration in its environment (NCCL/RCCL read most variables once per process). The
baseline ("defaults") is this environment: a space variable keeps its inherited value or stays
unset; GLOO_SOCKET_IFNAME, which has no usable unset state, takes its first listed value.
Configurations run in interleaved rounds (order rotated each round). Per size, the speed-up
over the baseline (baseline time / configuration time, paired by round) gets a t-interval on
its log (scipy); "faster" means the whole interval lies above 1 + --min-gain (default 2%).
A value that is itself a list is written with '+': GLOO_SOCKET_IFNAME=eth0+eth1.
exit codes: 0 done (whether or not something beat the defaults), 1 the baseline failed or no
trial succeeded, 2 bad input.
"""


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "tune", help="find the RCCL/NCCL settings that make collectives fastest, with proof",
        description="Sweep communication settings in fresh bench jobs, in interleaved rounds, "
                    "and keep what beats the defaults beyond noise.", epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_collectives_argument(p)
    p.add_argument("--space", action="append", default=[], metavar="NAME=V1,V2",
                   help="a variable and the values to try (repeatable)")
    p.add_argument("--preset", action="append", default=[], metavar="NAME",
                   help="a documented grid: rccl-basic, nccl-basic")
    p.add_argument("-b", "--min-bytes", default="1K", help="smallest size (default 1K)")
    p.add_argument("-e", "--max-bytes", default=None, help="largest size (default: bench's)")
    p.add_argument("-f", "--step-factor", type=int, default=4,
                   help="multiply the size by this each step (default 4)")
    p.add_argument("-n", "--iters", type=int, default=20, help="timed iterations (default 20)")
    p.add_argument("-w", "--warmup-iters", type=int, default=5,
                   help="warm-up iterations per size (default 5)")
    p.add_argument("-d", "--dtype", default="float", help="data type (default float)")
    add_flags(p, TuneConfig, ["rounds", "budget_s", "strategy", "confidence", "min_gain",
                              "timeout_s"])
    p.add_argument("--nproc", type=int, default=None,
                   help="local ranks per trial (standalone; default: bench's)")
    p.add_argument("--backend", default="auto", help="bench's --backend (default auto)")
    p.add_argument("--launch", metavar="TEMPLATE",
                   help="launcher command with {cmd} where the bench command goes")
    p.add_argument("--print-commands", action="store_true",
                   help="print the grid's trial commands instead of running them")
    p.add_argument("--merge", nargs="+", metavar="FILE",
                   help="judge bench JSON Lines files of trials run by hand")
    p.add_argument("--trials-dir", metavar="DIR",
                   help="keep every trial's JSON Lines and log here (default: a temporary "
                        "folder, removed; under Slurm or --launch it must be shared by rank 0)")
    p.add_argument("--json", metavar="FILE",
                   help="write tune_trial and tune records ('-': to stdout instead of the "
                        "table)")
    p.add_argument("--env-out", metavar="FILE", help="write the winners as bash export lines")
    p.add_argument("--tuner-csv", metavar="FILE",
                   help="write an NCCL example-tuner-plugin CSV (NCCL_TUNER_CONFIG_FILE)")
    p.set_defaults(handler=handle, needs_torch=True)


def _settings(args: argparse.Namespace) -> tuple[TuneConfig, Space, BenchArgs]:
    """(TuneConfig, Space, BenchArgs) from the flags; UsageError on anything wrong."""
    from collscope.bench.config import BenchConfig
    from collscope.tune.space import build_space, parse_assignment, preset_assignments
    from collscope.tune.trials import BenchArgs
    from collscope.units import parse_size

    config = config_from(TuneConfig, args)
    bench = BenchConfig(
        collectives=args.collectives or ["all_reduce"],
        min_bytes=parse_size(args.min_bytes, "-b/--min-bytes"),
        max_bytes=None if args.max_bytes is None else parse_size(args.max_bytes,
                                                                 "-e/--max-bytes"),
        step_factor=args.step_factor, iters=args.iters, warmup_iters=args.warmup_iters,
        dtypes=[args.dtype], out_of_place=False, backend=args.backend,
        timeout_s=config.collective_timeout_s)
    if len(bench.dtypes) != 1:
        raise UsageError(f"-d/--dtype: tune measures one dtype per sweep; got "
                         f"{', '.join(bench.dtypes)}")
    library = _library(args.backend)
    assignments = [parse_assignment(text, "--space") for text in args.space]
    for name in args.preset:
        assignments += preset_assignments(name, library)
    space = build_space(assignments, os.environ, library)
    bench_args = BenchArgs(tuple(bench.collectives), bench.min_bytes, bench.max_bytes,
                           bench.step_factor, bench.iters, bench.warmup_iters, bench.dtypes[0],
                           args.backend, config.collective_timeout_s)
    return config, space, bench_args


def _library(backend: str) -> Library:
    from collscope.doctor.envlint import version_tuple
    from collscope.tune.space import Library, Version

    if backend == "gloo":
        return Library()
    from collscope.runtime.dist import library_versions

    versions = library_versions()
    for name in ("rccl", "nccl"):
        if versions.get(name):
            found: Version | None = version_tuple(versions[name])
            return Library(name, found)
    return Library()


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.tune.trials import choose_launcher

    try:
        import scipy  # type: ignore[import-untyped]  # noqa: F401  (checked before any trial)
    except ImportError:
        raise UsageError("tune needs scipy for its confidence intervals: "
                         "pip install 'collscope[tune]'") from None
    if args.print_commands and args.merge:
        raise UsageError("--print-commands/--merge: use one (print, run by hand, then merge)")
    config, space, bench = _settings(args)
    launcher = choose_launcher(args.launch, args.nproc, os.environ)
    if args.print_commands:
        return _print_commands(space, config, launcher, bench, args)
    for flag, path in (("--env-out", args.env_out), ("--tuner-csv", args.tuner_csv)):
        check_writable(flag, path)     # written at the end: refused before the sweep, not after
    if args.merge:
        from collscope.tune.trials import merge_trials

        unusable: list[str] = []
        trials = merge_trials(args.merge, space.grid(), unusable)
        for warning in unusable:       # malformed lines are said, never dropped silently
            sys.stderr.write(f"collscope tune: {warning}\n")
        return _conclude(trials, space, config, args, "merged from " +
                         f"{len(args.merge)} file(s)", "")
    check_writable_folder("--trials-dir", args.trials_dir)   # the trials write there
    return _sweep(space, config, launcher, bench, args)


def _print_commands(space: Space, config: TuneConfig, launcher: Launcher, bench: BenchArgs,
                    args: argparse.Namespace) -> int:
    from collscope.tune.analysis import Trial
    from collscope.tune.plan import rounds_order
    from collscope.tune.trials import printed_command

    directory = Path(args.trials_dir or "tune-trials")
    configs = space.grid()
    print(f"# collscope tune: {len(configs)} configurations x {config.rounds} rounds, order "
          "rotated each round; run them in this order, then:")
    again = [*(w for s in args.space for w in ("--space", s)),
             *(w for p in args.preset for w in ("--preset", p))]
    print(f"#   collscope tune {shlex.join(again)} --merge {shlex.quote(str(directory))}/*.jsonl")
    print(f"# baseline: {'; '.join(space.baseline_notes)}")
    index = 0
    for round_, order in enumerate(rounds_order(configs, config.rounds)):
        print(f"# round {round_ + 1}")
        for position, cfg in enumerate(order):
            trial = Trial(index, 0, round_, position, cfg)
            path = directory / f"r{round_ + 1}-c{configs.index(cfg)}.jsonl"
            print(printed_command(launcher, bench, trial, path))
            index += 1
    return 0


def _sweep(space: Space, config: TuneConfig, launcher: Launcher, bench: BenchArgs,
           args: argparse.Namespace) -> int:
    from collscope.tune.records import TrialWriter, sweep_context
    from collscope.tune.run import Sweep

    if args.trials_dir:
        directory = Path(args.trials_dir)
        directory.mkdir(parents=True, exist_ok=True)
        holder = None
    else:
        holder = tempfile.TemporaryDirectory(prefix="collscope-tune-", dir=".")
        directory = Path(holder.name)
    writer = (TrialWriter(args.json, sweep_context(space, config, launcher.describe()),
                          keep_files=bool(args.trials_dir)) if args.json else None)
    total = len(space.grid())
    sys.stderr.write(f"collscope tune: {total} configuration(s) in the grid, {config.rounds} "
                     f"round(s), trials: {launcher.describe()}\n")

    def progress(trial: Trial) -> None:
        sys.stderr.write(f"  trial {trial.index + 1} (round {trial.round + 1}) "
                         f"{trial.config.label(space.baseline)}: {trial.status}"
                         f"{' - ' + trial.reason if trial.reason else ''} "
                         f"[{trial.wall_s:.1f} s]\n")
        if writer:
            writer.trial(trial, space.baseline)

    try:
        sweep = Sweep(config, space, launcher, bench, dict(os.environ), directory,
                      on_trial=progress)
        trials = sweep.run()
    finally:
        if holder is not None:
            holder.cleanup()
    how = f"{sweep.strategy}, trials via {launcher.describe()}"
    return _conclude(trials, space, config, args, how, sweep.stopped, writer)


def _conclude(trials: list[Trial], space: Space, config: TuneConfig, args: argparse.Namespace,
              how: str, stopped: str, writer: TrialWriter | None = None) -> int:
    from collscope.tune import handover
    from collscope.tune.analysis import CI_METHOD, analyse, significance
    from collscope.tune.records import TrialWriter, sweep_context

    rows = analyse(trials, space.baseline, config.confidence, config.min_gain)
    failed = {t.config: t.reason for t in trials if t.status == "failed"}
    context: dict[str, Any] = next(
        (t.context for t in trials if t.status == "ok" and t.context), {})
    if writer is None and args.json:
        writer = TrialWriter(args.json, sweep_context(space, config, how))
        for trial in trials:
            writer.trial(trial, space.baseline)
    if writer:
        writer.run_record(context)
        for record in handover.tune_records(rows, space.baseline, failed, config.confidence):
            writer.out.write(record)
        writer.out.close()
    from collscope.tune.report import render

    to_stdout = args.json == "-"          # then stdout carries the records and nothing else
    if not to_stdout:
        render(rows, failed, space, config, how, stopped, CI_METHOD)
    header = [f"collscope tune {__version__}: {how}",
              "baseline: " + "; ".join(space.baseline_notes),
              f"significance: {CI_METHOD}; {significance(rows, config.confidence)}; "
              f"faster = interval above {1 + config.min_gain:g}"]
    if args.env_out:
        _write(args.env_out, "--env-out", handover.env_lines(rows, space.baseline, header),
               to_stdout)
    if args.tuner_csv:
        _write(args.tuner_csv, "--tuner-csv", handover.tuner_csv(
            rows, space.baseline, int(context.get("nodes") or -1),
            int(context.get("world_size") or -1), _library(args.backend).name), to_stdout)
    ok = any(t.status == "ok" for t in trials)
    return 1 if (stopped.startswith("the baseline") or not ok) else 0


def _write(path: str, flag: str, lines: list[str], json_on_stdout: bool) -> None:
    try:
        Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{flag}: cannot write {path} ({error.strerror})") from None
    print(f"wrote {path}", file=sys.stderr if json_on_stdout else sys.stdout)
