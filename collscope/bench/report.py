"""Rank 0's output of `collscope bench`: the nccl-tests table on stdout as each size is
measured, the JSON Lines / CSV files, the progress bar, the --per-rank block and the
nccl-tests JSON writer. The CLI only parses flags and hands their targets over (BenchOutputs)."""

from __future__ import annotations

import sys
import time
from typing import Any

from collscope import __version__
from collscope.bench.config import BenchConfig, BenchOutputs
from collscope.bench.output import DeviceLine, column_header, device_block, footer, row
from collscope.collectives.table import COLLECTIVES
from collscope.versions import library_versions


class Reporter:
    """Rank 0's output: the nccl-tests table on stdout, JSON Lines / CSV files, a progress bar."""

    def __init__(self, config: BenchConfig, session: Any, outputs: BenchOutputs,
                 launcher_name: str):
        from collscope.bench import runner

        self.config = config
        self.session = session
        self.timing = runner.timing_method(session, config)
        self.versions = library_versions()
        self.launcher_name = launcher_name
        self.outputs = outputs
        self.block: list[Any] = []      # results of the collective being printed
        self.current = ""               # its name, for the "concluded" line
        self.json: Any = None
        self.csv: Any = None
        self.progress: Any = None
        self.task: Any = None
        self.total = 0
        self.late: list[Any] = []       # per-size LateRank of every collective, --per-rank
        self.block_started = time.time()
        self.skip_noted = False         # the note on skipped collectives, in the first header
        self.failures: list[str] = []   # outputs that failed while measuring (said at the end)
        # `--json -`: stdout carries the records only, so the table is not printed
        self.table = outputs.json != "-"

    def __enter__(self) -> Reporter:
        from collscope.records.jsonl import CsvWriter, JsonlWriter
        from collscope.records.run import RunRecord

        if self.outputs.json:
            self.json = JsonlWriter(self.outputs.json, "--json")
            self._write("json", RunRecord.for_session(
                "bench", self.session, self.launcher_name, self.timing,
                {"config": vars(self.config)}, self.versions).to_dict())
        if self.outputs.csv:
            self.csv = CsvWriter(self.outputs.csv, "--csv")
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                     MofNCompleteColumn(), console=Console(stderr=True),
                                     transient=True, redirect_stdout=sys.stdout.isatty())
            self.progress.start()
            self.task = self.progress.add_task("bench", total=0)
        return self

    def _print(self, line: str) -> None:
        if self.table:
            print(line, flush=True)

    def _write(self, which: str, record: Any) -> None:
        """One record to the JSON Lines or CSV writer; a write that fails ends that file (the
        ranks go on measuring, the table keeps every result) and is said at the end."""
        from collscope.errors import OutputError

        writer = getattr(self, which)
        if writer is None:
            return
        try:
            writer.write(record)
        except OutputError as error:
            self.failures.append(str(error))
            setattr(self, which, None)

    def collective(self, name: str, sweep: list[Any], memory_note: str | None) -> None:
        from collscope.bench import runner

        self._end_block()
        c = self.config
        layout = self.session.layout
        label = self.session.label
        lib = self.versions.get("rccl") or self.versions.get("nccl")
        self._print(f"# collscope {__version__} torch {self.versions['torch']} backend {label}"
                    + (f" {label}-library {lib}" if lib else ""))
        self._print(f"# Collective test starting: {name}")
        step = f"{c.step_bytes}(bytes)" if c.step_bytes else f"{c.step_factor}(factor)"
        max_bytes = max((p.requested_bytes for p in sweep), default=0)
        self._print(f"# nThread 1 nGpus 1 minBytes {c.min_bytes} maxBytes {max_bytes} step: "
                    f"{step} warmup iters: {c.warmup_iters} iters: {c.iters} agg iters: 1 "
                    f"validation: {1 if c.check else 0} graph: 0")
        self._print(f"# Timing: {self.timing}")
        if not COLLECTIVES[name].out_of_place and c.out_of_place:
            self._print(f"# {name} exists only in place in torch.distributed: the out-of-place "
                        "columns read N/A")
        skipped = [] if self.skip_noted else runner.skipped(c)
        if skipped:
            self.skip_noted = True
            self._print(f"# Skipped {', '.join(skipped)}: only in place in torch.distributed, "
                        "and --out-of-place leaves no placement to run")
        self._print("#")
        for line in device_block([
            DeviceLine(d["rank"], d["pid"], d["host"],
                       -1 if d["device"] is None else d["device"], d["device_type"], d["name"])
                for d in layout.devices]):
            self._print(line)
        self._print("#")
        if memory_note:
            self._print(memory_note)
            self._print("#")
        for line in column_header():
            self._print(line)
        self.current = name
        self.block_started = time.time()
        if self.progress:
            self.total += len(sweep)
            self.progress.update(self.task, total=self.total, description=name)

    def row(self, plan: Any, results: dict[bool, Any]) -> None:
        self._print(row(results.get(False), results.get(True)))
        for result in results.values():
            self.block.append(result)
            self._write("json", result.to_dict())
            self._write("csv", result)
        if self.progress:
            self.progress.advance(self.task)

    def _end_block(self) -> None:
        if not self.block:
            return
        for line in footer(self.block):
            self._print(line)
        self._print(f"# Collective test concluded: {self.current}")
        self._print("#")
        if self.outputs.per_rank:
            self._per_rank_block()
        if self.outputs.nccl_json:
            self._write_nccl_json()
        self.block = []

    def _hosts_by_rank(self) -> list[str]:
        return [d["host"] for d in self.session.layout.devices]

    def _per_rank_block(self) -> None:
        from collscope.bench.per_rank import late_rank, report_lines

        rows = []
        for result in self.block:
            late = late_rank(result.rank_op_us) if result.rank_op_us else None
            self.late.append(late)
            rows.append((result.collective, result.size_bytes, result.in_place, late))
        for line in report_lines(rows, self._hosts_by_rank()):
            self._print(line)
        self._print("#")

    def _write_nccl_json(self) -> None:
        from collscope.bench import nccl_json
        from collscope.records.run import recorded_env

        assert self.outputs.nccl_json is not None
        doc = nccl_json.document(
            self.block, self.config, self.session.layout.devices,
            ["collscope", *sys.argv[1:]], recorded_env(),
            self.versions.get("nccl") or self.versions.get("rccl"), self.block_started,
            time.time())
        try:
            written = nccl_json.write(self.outputs.nccl_json, doc)
        except OSError as error:
            self.failures.append(f"--nccl-json: writing '{self.outputs.nccl_json}' failed for "
                                 f"{self.current}: {error.strerror or error}")
            return
        line = f"# Wrote JSON output to {written}"
        if self.table:
            self._print(line)
        else:                            # `--json -`: stdout carries only the records
            sys.stderr.write(line + "\n")

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self._end_block()
            if self.outputs.per_rank:
                from collscope.bench.per_rank import finding_line, finding_record

                hosts = self._hosts_by_rank()
                self._print("# Late-rank finding: " + finding_line(
                    self.late, self.session.world_size, hosts))
                if self.json:            # the verdict in the records too (--json -: only there)
                    self.json.write(finding_record(self.late, self.session.world_size,
                                                   hosts).to_dict())
        if self.progress:
            self.progress.stop()
        for writer in (self.json, self.csv):
            if writer:
                writer.close()
