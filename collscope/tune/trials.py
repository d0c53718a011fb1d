"""Running one trial: a fresh `python -m collscope bench ... --json FILE` job per configuration.

NCCL and RCCL read most variables once per process, so a configuration can only be measured
in ranks started with it. Every trial is one bench job, started as an argument list (no
shell) with the configuration applied to the environment of the process tune starts:

* standalone: ``python -m collscope bench ... [--nproc N]`` (bench spawns the local ranks);
* inside a Slurm allocation: ``srun --export=ALL --kill-on-bad-exit=1 python -m collscope ...``;
* ``--launch TEMPLATE``: the template's words with the word ``{cmd}`` replaced by the bench
  command's words, e.g. ``mpirun -np 16 -x NCCL_ALGO {cmd}`` or a wrapper script.

Every trial runs in its own session and is killed as a process group when it outlives the
timeout; what it wrote is classified by :func:`classify` (pure).
"""

from __future__ import annotations

import math
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collscope.errors import UsageError
from collscope.records.jsonl import parse_jsonl, read_records
from collscope.records.tune import TrialStatus
from collscope.tune.analysis import Measurement, Trial
from collscope.tune.space import Config

CMD = "{cmd}"
TERM_GRACE_S = 5.0


@dataclass(frozen=True)
class BenchArgs:
    """The part of the bench command line that every trial shares."""

    collectives: tuple[str, ...]
    min_bytes: int
    max_bytes: int | None
    step_factor: int
    iters: int
    warmup_iters: int
    dtype: str
    backend: str
    collective_timeout_s: float

    def argv(self, json_path: str | Path) -> list[str]:
        """The bench command of a trial, its flags written by bench's own config (in-place
        only: one placement per trial)."""
        from collscope.bench.config import BenchConfig, BenchOutputs
        from collscope.config_flags import command_line

        sweep = command_line(BenchConfig, {
            "min_bytes": self.min_bytes, "max_bytes": self.max_bytes,
            "step_factor": self.step_factor, "iters": self.iters,
            "warmup_iters": self.warmup_iters, "dtypes": [self.dtype], "out_of_place": False,
            "backend": self.backend, "timeout_s": self.collective_timeout_s})
        return [sys.executable, "-m", "collscope", "bench", *self.collectives, *sweep,
                *command_line(BenchOutputs, {"json": str(json_path)})]


@dataclass(frozen=True)
class Launcher:
    mode: str                         # standalone, slurm, template
    template: tuple[str, ...] = ()
    nproc: int | None = None

    def argv(self, bench: list[str]) -> list[str]:
        if self.mode == "template":
            at = self.template.index(CMD)
            return [*self.template[:at], *bench, *self.template[at + 1:]]
        if self.mode == "slurm":
            return ["srun", "--export=ALL", "--kill-on-bad-exit=1", *bench]
        return [*bench, "--nproc", str(self.nproc)] if self.nproc else bench

    def describe(self) -> str:
        if self.mode == "template":
            return f"--launch {shlex.join(self.template)}"
        if self.mode == "slurm":
            return "srun inside this Slurm allocation"
        return f"standalone, {self.nproc or 'bench default'} local ranks"


def parse_template(text: str) -> tuple[str, ...]:
    try:
        words = tuple(shlex.split(text))
    except ValueError as error:
        raise UsageError(f"--launch: cannot split '{text}' into words ({error})") from None
    if words.count(CMD) != 1 or any(CMD in w for w in words if w != CMD):
        raise UsageError(f"--launch: '{text}' must hold {CMD} exactly once, as a word of its "
                         "own, e.g. 'mpirun -np 16 {cmd}' or 'my-wrapper.py {cmd}'")
    return words


def choose_launcher(template: str | None, nproc: int | None, environ: Mapping[str, str],
                    ) -> Launcher:
    """--launch wins; else srun inside a Slurm allocation; else local ranks."""
    from collscope.runtime.launchers import detect_launcher

    launched = detect_launcher(environ)
    if launched is not None and launched.world_size > 1:
        raise UsageError(f"tune starts its own trials, but this process is rank "
                         f"{launched.rank} of a {launched.world_size}-rank {launched.launcher} "
                         "job; run tune once (on the allocation's first node), with --launch, "
                         "or use --print-commands and --merge")
    if template is not None:
        if nproc is not None:
            raise UsageError("--nproc: the --launch template decides the ranks; drop --nproc")
        return Launcher("template", parse_template(template))
    if environ.get("SLURM_JOB_ID"):
        if nproc is not None:
            raise UsageError("--nproc: inside a Slurm allocation srun starts the allocation's "
                             "tasks; drop --nproc (or use --launch 'srun -n N {cmd}')")
        return Launcher("slurm")
    if nproc is not None and nproc < 1:
        raise UsageError(f"--nproc: {nproc} must be >= 1")
    return Launcher("standalone", nproc=nproc)


def classify(timed_out: bool, exit_code: int | None, records: Sequence[dict[str, Any]],
             stderr_tail: str, timeout_s: float) -> tuple[TrialStatus, str]:
    """(status, reason) of a finished trial: ok, or failed with the reason."""
    # The last line that says something: not bench's "#" comments or table rows.
    said_lines = [line.strip() for line in stderr_tail.splitlines()
                  if line.strip() and not line.lstrip().startswith("#")
                  and not line.strip()[0].isdigit()]
    last = said_lines[-1] if said_lines else ""
    said = f" ({last})" if last else ""
    results = [r for r in records if r.get("kind") == "result"]
    if timed_out:
        return "failed", f"hung: no exit within --timeout {timeout_s:g} s, killed{said}"
    malformed = next((problem for r in results if (problem := result_problem(r))), None)
    if malformed:
        return "failed", f"malformed result record: {malformed}"
    wrong = sum(int(r.get("wrong") or 0) for r in results)
    if wrong > 0:
        return "failed", f"#wrong {wrong} > 0: results failed verification"
    if exit_code != 0:
        return "failed", f"exit code {exit_code}{said}"
    if not results:
        return "failed", f"no results written{said}"
    return "ok", ""


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def result_problem(record: dict[str, Any]) -> str | None:
    """Why a bench result record cannot be judged, or None. Absent numbers (null) are
    allowed: such a size is not measured; numbers of the wrong type are not."""
    size, time_us = record.get("size_bytes"), record.get("time_us")
    if not isinstance(record.get("collective"), str):
        return f"collective {record.get('collective')!r} is not a collective name"
    if size is not None and not (_whole(size) and size >= 0):
        return f"size_bytes {size!r} is not a whole number of bytes"
    if time_us is not None and not (isinstance(time_us, (int, float))
                                    and not isinstance(time_us, bool)
                                    and math.isfinite(time_us)):
        return f"time_us {time_us!r} is not a number of microseconds"
    for name in ("wrong", "world_size"):
        value = record.get(name)
        if value is not None and not (_whole(value) and value >= 0):
            return f"{name} {value!r} is not a count (a whole number, or null)"
    return None


def measurements(records: Sequence[dict[str, Any]]) -> list[Measurement]:
    return [Measurement(str(r["collective"]), str(r.get("dtype", "float")), int(r["size_bytes"]),
                        float(r["time_us"]), int(r.get("world_size") or 0))
            for r in records if r.get("kind") == "result"
            and isinstance(r.get("time_us"), (int, float)) and r.get("size_bytes") is not None]


def run_trial(trial: Trial, launcher: Launcher, bench: BenchArgs, environ: Mapping[str, str],
              directory: Path, timeout_s: float) -> Trial:
    """Run one trial to completion or until ``timeout_s``; fills status, reason, measurements."""
    # Absolute: a launcher or wrapper may start the ranks in another working directory.
    json_path = directory.resolve() / f"trial-{trial.index:03d}.jsonl"
    log_path = directory.resolve() / f"trial-{trial.index:03d}.log"
    argv = launcher.argv(bench.argv(json_path))
    env = trial.config.environment(environ)
    started = time.monotonic()
    timed_out = False
    with open(log_path, "w", encoding="utf-8") as log:
        log.write(f"# {shlex.join(argv)}\n# config: {trial.config.as_dict()}\n")
        log.flush()
        try:
            process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as error:
            trial.status, trial.reason = "failed", f"cannot start {argv[0]}: {error.strerror}"
            return trial
        try:
            code: int | None = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            code = process.returncode
        except BaseException:
            # Ctrl-C reaches tune only (the trial has its own session): end the trial too.
            _kill_group(process)
            raise
    trial.wall_s = time.monotonic() - started
    trial.file = str(json_path)
    records = read_records(json_path)
    tail = log_path.read_text(encoding="utf-8", errors="replace")[-2000:]
    trial.status, trial.reason = classify(timed_out, code, records, tail, timeout_s)
    trial.context = next((r for r in records if r.get("kind") == "run"), {})
    trial.measurements = measurements(records) if trial.status == "ok" else []
    return trial


def _kill_group(process: subprocess.Popen[Any]) -> None:
    """SIGTERM the trial's process group, SIGKILL what is left after a grace period."""
    for sig, wait in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def printed_command(launcher: Launcher, bench: BenchArgs, trial: Trial, json_path: Path) -> str:
    """The trial as a line to paste: env assignments (and unsets), then the command."""
    words = ["env"]
    for name, value in trial.config.values:
        if value is None:
            words += ["-u", name]
        else:
            words.append(f"{name}={value}")
    return shlex.join([*words, *launcher.argv(bench.argv(json_path))])


def merge_trials(paths: Sequence[str], configs: Sequence[Config],
                 warnings: list[str] | None = None) -> list[Trial]:
    """Trials from bench JSON Lines files run by hand (--print-commands): each file's
    configuration is read from its run record's environment, its round from the order of the
    files' start times (the k-th run of a configuration is its round k). Lines that are not
    JSON objects are left out and said in ``warnings`` (report's words, file and line)."""
    found: list[tuple[float, str, Config, list[dict[str, Any]]]] = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise UsageError(f"--merge: cannot read {path} ({error.strerror or error})") from None
        numbered, problems = parse_jsonl(text, str(path))
        if warnings is not None:
            warnings.extend(problems)
        records = [record for _, record in numbered]
        run = next((r for r in records if r.get("kind") == "run"), None)
        if run is None or run.get("command") != "bench":
            raise UsageError(f"--merge: {path} is not a collscope bench JSON Lines file (no "
                             "bench run record)")
        env = run.get("env") or {}
        if not isinstance(env, dict):
            raise UsageError(f"--merge: {path}: run record's env {env!r} is not an object of "
                             "environment variables")
        config = next((c for c in configs if c.matches(env)), None)
        if config is None:
            shown = {name: env.get(name) for name, _ in configs[0].values}
            raise UsageError(f"--merge: {path} ran with {shown}, which is no configuration of "
                             "this --space/--preset; give the space the commands were printed "
                             "with")
        for number, record in numbered:
            problem = result_problem(record) if record.get("kind") == "result" else None
            if problem:
                raise UsageError(f"--merge: {path}: line {number}: {problem}; give the files "
                                 "collscope bench --json wrote")
        found.append((_started_at(run, path), str(path), config, records))
    trials = []
    seen: dict[Config, int] = {}
    for index, (_, path, config, records) in enumerate(sorted(found, key=lambda f: f[:2])):
        round_ = seen.get(config, 0)
        seen[config] = round_ + 1
        trial = Trial(index, 0, round_, index, config, file=path,
                      context=next(r for r in records if r.get("kind") == "run"))
        trial.status, trial.reason = classify(False, 0, records, "", 0.0)
        trial.measurements = measurements(records) if trial.status == "ok" else []
        trials.append(trial)
    return trials


def _started_at(run: dict[str, Any], path: str) -> float:
    started = run.get("started_at") or 0.0
    if not isinstance(started, (int, float)) or isinstance(started, bool):
        raise UsageError(f"--merge: {path}: run record's started_at {started!r} is not a time "
                         "in seconds")
    return float(started)
