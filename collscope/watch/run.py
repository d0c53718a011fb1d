"""The wrapper: `collscope watch` runs the user's command with the agent injected, and turns
what the agents send into output.

Aggregation happens in rank 0's agent (inside the job, where the store is); the wrapper only
reads what the agents of its node write to a private folder (one JSON Lines file per rank,
handed over in COLLSCOPE_WATCH_CHANNEL), and prints the live line and findings on stderr,
serves /metrics and writes --json. The node running rank 0 gets every rank's records; other
nodes' wrappers only learn of a stall (to end their part of the job with --on-hang kill).
The command's stdout, stderr and exit code stay its own; SIGINT/SIGTERM reach the whole job
(monitor's wrap.supervise); --on-hang kill ends it and exits KILLED_EXIT.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import collscope
from collscope.errors import ExitCode
from collscope.monitor import wrap
from collscope.records.watch import cost_line
from collscope.runtime.flight_recorder import BUFFER_VARIABLES
from collscope.watch import sinks, stacks
from collscope.watch.aggregate import DUMP_DEADLINE_S
from collscope.watch.config import CHANNEL_ENV, SETTINGS_ENV, WatchConfig
from collscope.watch.waits import MAIN_THREAD

KILLED_EXIT = ExitCode.HANG_KILLED   # the job was ended on purpose, after a stall
POLL_S = 0.2
LIVE_TTY_S = 2.0
LIVE_PLAIN_S = 30.0
KILL_GRACE_S = 10.0
# A node that got no verdict (rank 0 is elsewhere) ends its part after the dumps' deadline
# plus the time the verdict takes on rank 0's node.
KILL_WITHOUT_VERDICT_S = DUMP_DEADLINE_S + 15.0
# Said at the end of an NCCL job whose windows never carried a duration.
NO_DURATIONS = ("no busbw: the Flight Recorder recorded no NCCL durations; run the job with "
                "TORCH_NCCL_ENABLE_TIMING=1 to get each collective's busbw per rank")
BOOTSTRAP = str(Path(__file__).parent / "bootstrap")


def child_env(environ: dict[str, str], channel: str, config: WatchConfig) -> dict[str, str]:
    """The job's environment: the bootstrap first on PYTHONPATH (then collscope itself, so
    the job's python finds it), the channel and settings. The Flight Recorder's variable is
    not set here: which name the job's torch reads is known only inside a rank (the hook
    sets it there, before init_process_group)."""
    package_root = str(Path(collscope.__file__).parent.parent)
    paths = [BOOTSTRAP, package_root, *filter(None, environ.get("PYTHONPATH", "").split(
        os.pathsep))]
    env = {**environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
           CHANNEL_ENV: channel, SETTINGS_ENV: config.agent_settings().to_env()}
    return env


class Tail:
    """New complete lines of every file in a folder, file by file."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._offsets: dict[str, int] = {}

    def lines(self) -> list[dict[str, Any]]:
        import json

        out: list[dict[str, Any]] = []
        for name in sorted(os.listdir(self.folder)):
            path = os.path.join(self.folder, name)
            with open(path, "rb") as handle:
                handle.seek(self._offsets.get(name, 0))
                data = handle.read()
            complete = data[:data.rfind(b"\n") + 1]
            self._offsets[name] = self._offsets.get(name, 0) + len(complete)
            out += [json.loads(line) for line in complete.splitlines() if line.strip()]
        return out


class Watch:
    def __init__(self, config: WatchConfig, writer: Any) -> None:
        self.config = config
        self.writer = writer
        self.metrics = sinks.Metrics()
        self.process: Any = None
        self.hosts: dict[int, str] = {}
        self.windows: dict[tuple[int, str], dict[str, Any]] = {}
        self.active: dict[tuple[Any, ...], dict[str, Any]] = {}   # (group, *ranks)
        self.killed = False
        self.first_dump_at: float | None = None
        self.verdict_done = False
        self._console = _console()
        self._rate: tuple[float, int] | None = None
        self.rate_per_s: float | None = None
        self.costs: list[dict[str, Any]] = []
        self.backend = ""
        self.reads = "flight_recorder"     # the watch_job record's flight_recorder.reads

    def say(self, text: str) -> None:
        if self._console is not None:
            self._console.print(f"[bold cyan]collscope watch:[/] {text}", highlight=False)
        else:
            sys.stderr.write(f"collscope watch: {text}\n")
            sys.stderr.flush()

    def record(self, record: dict[str, Any]) -> None:
        if self.writer is not None:
            self.writer.write(record)

    def handle(self, record: dict[str, Any]) -> None:
        kind = record.get("kind")
        if kind == "watch_dumped":
            self.first_dump_at = self.first_dump_at or time.monotonic()
            return
        self.record(record)
        if kind == "watch_window":
            self.metrics.update(record)
            self.windows[(record["rank"], record["group"])] = record
            if record["rank"] == 0:
                self._count(record)
        elif kind == "watch_job":
            self.hosts = {r["rank"]: r["host"] for r in record["ranks"]}
            self.backend = str(record["backend"])
            clock = record["clock"]
            self.say(f"watching {record['world_size']} ranks on {len(record['hosts'])} "
                     f"host(s) ({record['backend']}); clocks: {clock['reason']}")
            self.flight_recorder(record["flight_recorder"])
        elif kind == "finding":
            key = (record["group"], *(record.get("ranks") or [record["rank"]]))
            if record["state"] == "started":
                self.active[key] = record
            else:
                self.active.pop(key, None)
            self.say(record["title"])
        elif kind == "watch_stall":
            self._stall(record)
        elif kind == "watch_agent":
            self.costs.append(record)
        elif kind == "watch_notice":
            self.say(record["title"])

    def flight_recorder(self, fr: dict[str, Any]) -> None:
        """Said once for the job (rank 0's view): a variable this torch ignores, and what is
        watched where no ring records the backend."""
        self.reads = str(fr.get("reads") or "flight_recorder")
        if fr.get("ignored"):
            self.say(f"torch {fr.get('torch')} does not read {', '.join(fr['ignored'])}"
                     + (f"; it reads {fr['variable']}={fr['entries']}" if fr.get("variable")
                        else ""))
        if self.reads == MAIN_THREAD:
            self.say(f"no Flight Recorder for this job: {fr.get('why')}. Watching for a stall "
                     "only: each rank's main thread inside a torch.distributed collective (or "
                     f"DDP's backward) for longer than --hang-after "
                     f"({self.config.hang_after_s:g} s), then every rank's stack and the ranks "
                     "that do not answer. Lost: straggler windows, per-collective lateness "
                     "and busbw, and the collective numbers in the verdict")

    def _count(self, window: dict[str, Any]) -> None:
        total = sum(w_count for w in self.windows.values() if w["rank"] == 0
                    for w_count in w["collectives_total"].values())
        now = time.monotonic()
        if self._rate is not None and now > self._rate[0]:
            self.rate_per_s = (total - self._rate[1]) / (now - self._rate[0])
        self._rate = (now, total)

    def _stall(self, stall: dict[str, Any]) -> None:
        what = (f"{stall['collective']} #{stall['seq']} of group {stall['group']}"
                if stall["seq"] >= 0 else f"main thread in {stall['collective']}")
        self.say(f"stall: rank {stall['detected_by']}'s {what} pending "
                 f"{stall['pending_s']:.1f} s; dumps of "
                 f"{len(stall['answered'])} rank(s) in {stall['dump_dir']}" +
                 (f"; no answer from rank(s) {', '.join(map(str, stall['no_answer']))}"
                  if stall["no_answer"] else ""))
        self.verdict(stall["dump_dir"])
        self.verdict_done = True
        if self.config.on_hang == "kill":
            self.kill("--on-hang kill after the verdict")

    def verdict(self, folder: str) -> None:
        """collscope hang's analysis of the dumps: its verdict printed, its records kept."""
        from collscope.errors import UsageError
        from collscope.hang import analyse_paths, analysis_records, render_text

        if self.reads == MAIN_THREAD:
            verdict = stacks.judge(*stacks.read_folder(folder), hosts=self.hosts or None)
            self.record(verdict.to_dict())
            self.say(verdict.title)
            return
        try:
            analysis = analyse_paths([folder], hosts=self.hosts or None)
        except UsageError as error:
            self.say(f"the dumps could not be analysed: {error}")
            return
        for record in analysis_records(analysis):
            self.record(record)
        self.say(render_text(analysis).rstrip("\n"))

    def kill(self, why: str) -> None:
        if self.killed or self.process is None or self.process.poll() is not None:
            return
        self.killed = True
        self.say(f"ending the job ({why}); exit code {KILLED_EXIT}")
        try:
            self.process.terminate()
        except ProcessLookupError:
            return

        def kill_if_alive() -> None:            # the job outlived the grace period
            if self.process.poll() is None:
                wrap.kill_tree(self.process)

        timer = threading.Timer(KILL_GRACE_S, kill_if_alive)
        timer.daemon = True
        timer.start()

    def tick(self) -> None:
        """A node without rank 0 gets no verdict: with --on-hang kill it ends its part once
        its ranks have dumped and rank 0's node has had time for the verdict."""
        if self.config.on_hang == "kill" and not self.verdict_done and \
                self.first_dump_at is not None and \
                time.monotonic() - self.first_dump_at > KILL_WITHOUT_VERDICT_S:
            self.kill("--on-hang kill: this node's ranks dumped; no verdict reached it")

    def live(self) -> str:
        return sinks.live_line(list(self.windows.values()), self.rate_per_s,
                               [sinks.straggler_text(f) for _, f in sorted(self.active.items())],
                               self.metrics.busbw())

    def finish(self) -> None:
        """Stragglers still flagged when the job ended get their 'ended' record."""
        for record in self.active.values():
            ended = {**record, "state": "ended", "time": time.time(),
                     "title": f"straggler ended with the job: {sinks.straggler_text(record)}"}
            self.record(ended)
            self.say(ended["title"])
        self.active.clear()
        if "nccl" in self.backend and self.windows and not self.metrics.busbw():
            self.say(NO_DURATIONS)
        if self.costs:
            self.say(cost_line(self.costs))


def _console() -> Any:
    if not sys.stderr.isatty():
        return None
    from rich.console import Console

    return Console(stderr=True)


def check_dump_dir(folder: str) -> None:
    """--dump-dir is made only on a stall; now its nearest existing folder must be one we
    can write in (UsageError, exit 2)."""
    from collscope.errors import UsageError

    existing = os.path.abspath(folder)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"--dump-dir: cannot write into '{folder}': {existing} is a file")
    try:
        os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".collscope-watch-check-"))
    except OSError as error:
        raise UsageError(f"--dump-dir: cannot write into '{folder}': {existing}: "
                         f"{error.strerror or error}") from None


def run_record(config: WatchConfig) -> dict[str, Any]:
    from collscope.records.run import RunRecord
    from collscope.runtime.launchers import detect_launcher
    from collscope.versions import library_versions

    launch = detect_launcher(os.environ)
    settings = config.agent_settings()
    return RunRecord.create(
        "watch", launcher=launch.launcher if launch is not None else "local", backend="",
        world_size=0, nodes=0, ranks_per_node=0, hosts=[socket.gethostname()], devices=[],
        timing=("enqueue times from each rank's Flight Recorder (time_created_ns), read every "
                "--interval; the job's ranks, backend, torch versions and clock alignment follow "
                "in the watch_job record"),
        extra={"command": config.command, "interval_s": settings.interval_s,
               "hang_after_s": settings.hang_after_s, "on_hang": config.on_hang,
               "dump_dir": settings.dump_dir,
               # the user's own; each rank adds the name its torch reads (watch_job)
               "flight_recorder_env": {n: os.environ[n] for n in BUFFER_VARIABLES
                                       if os.environ.get(n)}},
        versions=library_versions(with_torch=False)).to_dict()


def run_watch(config: WatchConfig) -> int:
    from collscope.records.jsonl import JsonlWriter

    writer = JsonlWriter(config.json, "--json") if config.json else None
    watch = Watch(config, writer)
    exporter = None
    if config.listen is not None:
        from collscope.monitor.prometheus import PrometheusExporter

        exporter = PrometheusExporter(*config.listen, body=watch.metrics.render,
                                      name="watch").start()
        watch.say(f"metrics at {exporter.url}")
    channel = tempfile.mkdtemp(prefix="collscope-watch-")
    try:
        if writer is not None:
            writer.write(run_record(config))
        watch.process = wrap.start_command(config.command,
                                           env=child_env(dict(os.environ), channel, config))
        stop = threading.Event()
        reader = threading.Thread(target=_follow, args=(watch, Tail(channel), stop),
                                  name="collscope-watch-tail", daemon=True)
        reader.start()
        status = wrap.supervise(watch.process)
        stop.set()
        reader.join()
        watch.finish()
        return KILLED_EXIT if watch.killed else status
    finally:
        if exporter is not None:
            exporter.close()
        if writer is not None:
            writer.close()
        shutil.rmtree(channel, ignore_errors=True)


def _follow(watch: Watch, tail: Tail, stop: threading.Event) -> None:
    """The wrapper's reading loop: records as they come, the live line now and then; one
    last read after the job ended."""
    every = LIVE_TTY_S if watch._console is not None else LIVE_PLAIN_S
    next_line = time.monotonic() + every
    while True:
        ended = stop.wait(POLL_S)
        try:
            for record in tail.lines():
                watch.handle(record)
            watch.tick()
        except Exception as error:  # noqa: BLE001 (the job runs on; we say why we stopped)
            watch.say(f"stopped reading the agents' records ({type(error).__name__}: "
                      f"{error}); the job goes on")
            return
        if ended:
            return
        if time.monotonic() >= next_line and watch.windows:
            watch.say(watch.live())
            next_line = time.monotonic() + every
