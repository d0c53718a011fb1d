"""`collscope bench`: parse flags into a BenchConfig, launch or join ranks, render the table."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from collscope import __version__
from collscope.bench.config import BenchConfig
from collscope.cli._common import add_nproc_argument
from collscope.collectives.table import COLLECTIVES
from collscope.config_flags import add_flags, config_from

EXAMPLES = """\
examples:
  collscope bench                                  # all_reduce, 8 B .. 64 MiB (CPU) / 4 GiB (GPU)
  collscope bench all -b 1K -e 256M -f 4           # every collective
  collscope bench all_gather reduce_scatter -d bfloat16 -n 50 -w 10
  collscope bench -o all -d float,int32 --json ar.jsonl --csv ar.csv
  collscope bench --target-precision 0.02          # adaptive: +-2% CI of the median per size
  collscope bench --nproc 4 --backend gloo         # 4 local CPU ranks
  collscope bench --algo hierarchical -b 1M -e 64M # node-aware all_reduce, same table
  collscope bench --per-rank -b 64K -e 16M         # the late rank of each size, and a finding
  collscope bench --nccl-json ar.json              # nccl-tests' -J JSON (version 3, per-iter)
  torchrun --nproc-per-node 8 -m collscope bench
  torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d \\
           --rdzv-endpoint node0:29500 -m collscope bench all_reduce -e 8G
  srun -N 2 --ntasks-per-node 8 --gpus-per-node 8 python -m collscope bench
  mpirun -np 16 -x MASTER_ADDR=node0 -x MASTER_PORT=29500 python -m collscope bench

algbw = size / time and busbw = algbw x factor (2(n-1)/n all_reduce; (n-1)/n all_gather,
reduce_scatter, alltoall; 1 broadcast, reduce, sendrecv), exactly as nccl-tests; GB/s = 1e9 B/s.
time = mean per op over the timed loop (device events on GPUs, perf_counter on CPU).
exit codes: 0 ok, 1 a rank failed or timed out, 2 bad input, 3 a result failed verification.
"""


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "bench", help="collective benchmarks with nccl-tests' numbers",
        description="Benchmark collectives on torch.distributed; the table reads like "
                    "nccl-tests'.", epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("collectives", nargs="*", default=["all_reduce"], metavar="COLLECTIVE",
                   help=f"{', '.join(COLLECTIVES)} or all (default all_reduce)")
    add_flags(p, BenchConfig, ["min_bytes", "max_bytes", "step_factor", "step_bytes", "iters",
                               "warmup_iters", "dtypes", "ops", "root", "check", "blocking",
                               "average"])
    placement = p.add_mutually_exclusive_group()
    placement.add_argument("--in-place", action="store_true", help="only in-place")
    placement.add_argument("--out-of-place", action="store_true", help="only out-of-place")
    add_flags(p, BenchConfig, ["target_precision", "time_budget_s", "algo", "ranks_per_node"])
    add_nproc_argument(p)
    add_flags(p, BenchConfig, ["backend", "timeout_s"])
    p.add_argument("--json", metavar="FILE", help="write JSON Lines records (flushed per size)")
    p.add_argument("--csv", metavar="FILE", help="write one CSV row per result")
    p.add_argument("--per-rank", action="store_true",
                   help="print per size the late rank (shortest own op time; binomial and "
                        "Wilcoxon tests) and the wait it causes, and name a rank late in "
                        "most sizes")
    p.add_argument("--nccl-json", metavar="FILE",
                   help="also write nccl-tests' -J JSON (file version 3, per-iteration blocks "
                        "as with -I 1); never overwrites: FILE.0, FILE.1, ... as nccl-tests")
    p.set_defaults(handler=handle)


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    return config_from(BenchConfig, args, collectives=args.collectives or ["all_reduce"],
                       in_place=not args.out_of_place, out_of_place=not args.in_place)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from collscope.runtime.entry import Job, launch_or_spawn

    config = config_from_args(args)

    def body(session: Any, launcher_name: str) -> int:
        from collscope.bench import runner

        with ExitStack() as stack:
            reporter = stack.enter_context(Reporter(config, session, args, launcher_name)) \
                if session.rank == 0 else None
            results = runner.run(config, session,
                                 on_row=reporter.row if reporter else None,
                                 on_collective=reporter.collective if reporter else None)
        return 3 if runner.any_wrong(results) else 0

    return launch_or_spawn(Job("bench", config.backend, config.timeout_s, args.nproc,
                               config.validate_for_job, body), argv)


class Reporter:
    """Rank 0's output: the nccl-tests table on stdout, JSON Lines / CSV files, a progress bar."""

    def __init__(self, config: BenchConfig, session: Any, args: argparse.Namespace,
                 launcher_name: str):
        from collscope.bench import runner
        from collscope.versions import library_versions

        self.config = config
        self.session = session
        self.timing = runner.timing_method(session, config)
        self.versions = library_versions()
        self.launcher_name = launcher_name
        self.args = args
        self.block: list[Any] = []      # results of the collective being printed
        self.current = ""               # its name, for the "concluded" line
        self.json: Any = None
        self.csv: Any = None
        self.progress: Any = None
        self.task: Any = None
        self.total = 0
        self.late: list[Any] = []       # per-size LateRank of every collective, --per-rank
        self.block_started = time.time()

    def __enter__(self) -> Reporter:
        from collscope.results import CsvWriter, JsonlWriter, RunRecord

        if self.args.json:
            self.json = JsonlWriter(self.args.json)
            self.json.write(RunRecord.for_session(
                "bench", self.session, self.launcher_name, self.timing,
                {"config": vars(self.config)}, self.versions).to_dict())
        if self.args.csv:
            self.csv = CsvWriter(self.args.csv)
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
        print(line, flush=True)

    def collective(self, name: str, sweep: list[Any], memory_note: str | None) -> None:
        from collscope.bench.output import DeviceLine, column_header, device_block

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
        from collscope.bench.output import row

        self._print(row(results.get(False), results.get(True)))
        for result in results.values():
            self.block.append(result)
            if self.json:
                self.json.write(result.to_dict())
            if self.csv:
                self.csv.write(result)
        if self.progress:
            self.progress.advance(self.task)

    def _end_block(self) -> None:
        from collscope.bench.output import footer

        if not self.block:
            return
        for line in footer(self.block):
            self._print(line)
        self._print(f"# Collective test concluded: {self.current}")
        self._print("#")
        if self.args.per_rank:
            self._per_rank_block()
        if self.args.nccl_json:
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
        from collscope.results import recorded_env

        doc = nccl_json.document(
            self.block, self.config, self.session.layout.devices,
            ["collscope", *sys.argv[1:]], recorded_env(),
            self.versions.get("nccl") or self.versions.get("rccl"), self.block_started,
            time.time())
        self._print(f"# Wrote JSON output to {nccl_json.write(self.args.nccl_json, doc)}")

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self._end_block()
            if self.args.per_rank:
                from collscope.bench.per_rank import finding

                found = finding(self.late, self.session.world_size, self._hosts_by_rank())
                self._print("# Late-rank finding: " + (found.message() if found else
                            "none (no rank is the late rank in most sizes beyond chance)"))
        if self.progress:
            self.progress.stop()
        for writer in (self.json, self.csv):
            if writer:
                writer.close()
