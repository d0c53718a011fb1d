"""``collscope monitor`` end to end: sources, sinks, the wrapped command, the summary.

The CLI builds a MonitorConfig and calls ``run_monitor``; everything here is I/O glue around
the pure pieces (rates, summary, Prometheus text, compact line).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import string
import sys
from contextlib import ExitStack, nullcontext
from dataclasses import asdict
from typing import IO, Any

from collscope.errors import UsageError
from collscope.monitor.config import MonitorConfig
from collscope.monitor.sampler import Sampler, default_sources
from collscope.monitor.summary import format_summary
from collscope.records.sample import SampleRecord

TIMING = ("baseline reading at start, then every interval on a fixed schedule plus a final "
          "reading at stop; gauges are instantaneous (cpu.percent is the busy share of all "
          "cores between two readings, from psutil.cpu_times() deltas: idle and iowait are "
          "idle); *_per_s = counter delta / monotonic time between the two readings; "
          "intervals where a counter went backwards (reset, wrap) get no rate")


PLACEHOLDERS = ("host", "node")


def node_label(flag: str, launch: Any) -> str:
    """What ``{node}`` means here: the launcher's node rank; 0 outside a job or in a one-node
    job (a single node is node 0); a usage error in a multi-node job whose launcher gives no
    node rank (``{host}`` tells the nodes apart there)."""
    if launch is None:
        return "0"
    if launch.node_rank is not None:
        return str(launch.node_rank)
    if launch.world_size <= launch.local_world_size:
        return "0"
    raise UsageError(f"{flag}: {{node}} needs the node rank, which {launch.launcher} does not "
                     "give; use {host} to tell the nodes apart")


def output_path(flag: str, path: str, host: str, launch: Any) -> str:
    """Where this node writes ``path`` (given to ``flag``): ``{host}`` / ``{node}`` are filled
    in (``{{`` and ``}}`` are literal braces); in a multi-node job a path without them gets
    ``.node<N>`` (or ``.<host>``) before its suffix, so nodes that share a file system do not
    overwrite each other's file. ``-`` (stdout) stays ``-``."""
    if path == "-":
        return path
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion
                  in string.Formatter().parse(path) if name is not None]
    except ValueError:           # a lone "{" or "}"
        fields = [("", None, None)]
    if any(name not in PLACEHOLDERS or spec or conversion for name, spec, conversion in fields):
        raise UsageError(f"{flag}: {path!r}: only the placeholders {{host}} (this host's name) "
                         "and {node} (the node rank) can be filled in; write {{ and }} for "
                         "literal braces")
    node = node_label(flag, launch) if any(name == "node" for name, _, _ in fields) else ""
    filled = path.format(host=host, node=node)
    if fields:
        return filled
    path = filled
    if launch is not None and launch.world_size > launch.local_world_size:
        stem, suffix = os.path.splitext(path)
        label = host if launch.node_rank is None else f"node{launch.node_rank}"
        return f"{stem}.{label}{suffix}"
    return path


def output_paths(config: MonitorConfig, host: str, launch: Any) -> dict[str, str]:
    """``{flag: path this node writes}`` for every output flag given."""
    given = {"--json": config.json, "--summary-json": config.summary_json}
    return {flag: output_path(flag, path, host, launch) for flag, path in given.items() if path}


def run_record(config: MonitorConfig, sampler: Sampler, backend: Any, inventory: list[Any],
               launch: Any) -> dict[str, Any]:
    from collscope.records.run import RunRecord
    from collscope.versions import library_versions

    world = launch.world_size if launch else 1
    per_node = launch.local_world_size if launch else 1
    # Without torch: monitor stays light beside a training job.
    return RunRecord.create(
        "monitor", launcher=launch.launcher if launch else "local", backend="",
        world_size=world, nodes=max(1, world // max(1, per_node)), ranks_per_node=per_node,
        hosts=[sampler.host], devices=[asdict(gpu) for gpu in inventory],
        versions=library_versions(backend.name, with_torch=False), timing=TIMING,
        started_at=sampler.started_at or 0.0,
        extra={"interval_s": config.interval_s, "duration_s": config.duration_s,
               "gpu_backend": backend.name, "command": config.command,
               "node_rank": launch.node_rank if launch else None,
               "sources": [source.name for source in sampler.sources]},
    ).to_dict()


class JsonlSink:
    """``--json`` as a sampler sink. Opening or the first (run) record failing is bad input;
    a later failure (disk full) is remembered, so the run says so and does not exit 0."""

    def __init__(self, path: str) -> None:
        from collscope.records.jsonl import JsonlWriter

        self.path = path
        self.failed = False
        self._writer = JsonlWriter(path, "--json")      # UsageError (exit 2) if it can't open

    def write_first(self, record: dict[str, Any]) -> None:
        from collscope.errors import OutputError

        try:
            self._writer.write(record)
        except OutputError as error:       # nothing sampled yet: bad input, exit 2
            raise UsageError(str(error)) from None

    def __call__(self, sample: SampleRecord) -> None:
        from collscope.errors import OutputError

        try:
            self._writer.write(sample.to_dict())
        except OutputError:
            self.failed = True
            raise           # the sampler keeps the first error for the end of the run

    def __repr__(self) -> str:       # how the sampler's error report names this sink
        return f"--json {self.path}"

    def close(self) -> None:
        self._writer.close()


def _open_text(path: str, out: IO[str]) -> Any:
    """``path`` opened for writing, or ``out`` (left open) for ``-``."""
    return nullcontext(out) if path == "-" else open(path, "w", encoding="utf-8")


def _pick_backend(name: str) -> Any:
    from collscope.hw import detect_backend, make_backend

    if name == "auto":
        return detect_backend()
    backend = make_backend(name)
    if not backend.available():
        backend.close()
        hint = {"amd": " (is amdsmi installed: pip install collscope[amd], and the amdgpu "
                       "driver loaded?)",
                "nvidia": " (is nvidia-ml-py installed: pip install collscope[nvidia], and the "
                          "NVIDIA driver loaded?)"}.get(name, "")
        raise UsageError(f"--gpu-backend: {name} sees no GPU here{hint}")
    return backend


def run_monitor(config: MonitorConfig, launch: Any = None, out: IO[str] | None = None,
                err: IO[str] | None = None) -> int:
    """Sample until ``duration``, Ctrl-C or the end of the wrapped command; the exit code."""
    from collscope.monitor.sources import ProcessTreeSource

    out = out or sys.stdout
    err = err or sys.stderr
    host = socket.gethostname()
    paths = output_paths(config, host, launch)
    if config.command:
        from collscope.monitor.wrap import check_command

        check_command(config.command)
    # Every other refusal comes before --json truncates an existing file.
    with ExitStack() as stack:
        exporter = None
        if config.listen is not None:
            from collscope.monitor.prometheus import PrometheusExporter

            exporter = PrometheusExporter(*config.listen)
            stack.callback(exporter.close)
        backend = _pick_backend(config.gpu_backend)
        stack.callback(backend.close)
        inventory = backend.inventory()
        writer = None
        if "--json" in paths:
            writer = JsonlSink(paths["--json"])
            stack.callback(writer.close)
        sources = default_sources(gpu_backend=backend)
        process_source = ProcessTreeSource() if config.command else None
        if process_source is not None:
            sources.append(process_source)
        sinks: list[Any] = []
        if writer is not None:
            sinks.append(writer)
        if exporter is not None:
            sinks.append(exporter)
        view = _view(config, out)
        if view is not None:
            sinks.append(view)
        sampler = Sampler(interval=config.interval_s, sources=sources, sinks=sinks, host=host,
                          duration=config.duration_s)
        sampler.baseline()
        if writer is not None:
            writer.write_first(run_record(config, sampler, backend, inventory, launch))
        if exporter is not None:
            exporter.start()
            err.write(f"collscope monitor: Prometheus metrics at {exporter.url}\n")
            err.flush()
        if hasattr(view, "start"):
            view.start()
            stack.callback(view.close)

        if config.command:
            code = _run_command(config, sampler, process_source)
        else:
            code = _wait(sampler)
        sampler.stop()
        if writer is not None:
            writer.close()

        summary = sampler.summary(command=config.command or None,
                                  exit_code=code if config.command else None,
                                  gpu_backend=backend.name)
        if hasattr(view, "close"):
            view.close()
        if "--summary-json" in paths:
            path = paths["--summary-json"]
            try:
                with _open_text(path, out) as handle:
                    json.dump(summary.to_dict(), handle, indent=1)
                    handle.write("\n")
            except OSError as error:
                from collscope.records.jsonl import cannot_write

                err.write(f"collscope monitor: {cannot_write('--summary-json', path, error)}\n")
                code = code or 1
        stream = err if config.command or config.json_to_stdout else out
        stream.write("\n".join(format_summary(summary)) + "\n")
        for source, problem in sampler.errors.items():
            what = "failed for some samples" if source.startswith("sink ") else \
                "skipped in some samples"
            err.write(f"collscope monitor: {source} {what}: {problem}\n")
        stream.flush()
        if writer is not None and writer.failed:
            code = code or 1     # samples were lost: not a clean run
        return code


def _view(config: MonitorConfig, out: IO[str]) -> Any:
    """Live view on a terminal, a compact line per sample in a pipe, nothing while a wrapped
    command owns the output or stdout carries JSON (``--json -``, ``--summary-json -``)."""
    if config.command or config.json_to_stdout:
        return None
    if out.isatty():
        from collscope.monitor.view import LiveView

        return LiveView(interval=config.interval_s)
    from collscope.monitor.view import compact_line

    def print_line(record: SampleRecord) -> None:
        out.write(compact_line(record) + "\n")
        out.flush()

    return print_line


def _wait(sampler: Sampler) -> int:
    """Sample until the duration ends or Ctrl-C / SIGTERM; 0, or 128 + the signal."""
    stopped_by: list[int] = []

    def interrupt(signum: int, _frame: object) -> None:
        stopped_by.append(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        sampler.start()
        sampler.finished.wait()
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 + stopped_by[0] if stopped_by else 0


def _run_command(config: MonitorConfig, sampler: Sampler, process_source: Any) -> int:
    from collscope.monitor.wrap import start_command, supervise

    process = start_command(config.command)
    process_source.pid = process.pid
    sampler.start()
    return supervise(process)
