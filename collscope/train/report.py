"""What rank 0 prints for `collscope train`: a line per configuration as it is measured, then
the table ranked by step time and the recommendation (pure formatting, no torch), and the
Reporter that prints them and writes the JSON Lines file."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collscope.config_flags import HIER_CHUNK_DEFAULT
from collscope.records.train import TrainRecord
from collscope.train import analysis
from collscope.train.config import TrainConfig
from collscope.units import format_size


def _mib(nbytes: float) -> str:
    return format_size(int(nbytes)) if nbytes else "0 B"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def _estimate(record: TrainRecord) -> str:
    """' (estimate 2.1 GiB, measured/estimate 0.93)': the pre-flight next to the peak."""
    if not record.estimated_memory_bytes:
        return ""
    ratio = record.peak_memory_bytes / record.estimated_memory_bytes
    return f" (pre-flight estimate {_mib(record.estimated_memory_bytes)}, x{ratio:.2f})"


def _ci(record: TrainRecord) -> str:
    """' (95% CI 1.2..3.4)' for exposed comm, with the interval's exact coverage."""
    low, high = record.exposed_comm_ms_ci_low, record.exposed_comm_ms_ci_high
    if low is None or high is None or record.exposed_comm_ci_confidence is None:
        return ""
    import math

    return (f" ({math.floor(record.exposed_comm_ci_confidence * 100):.0f}% CI "
            f"{low:.1f}..{high:.1f})")


def header(record: TrainRecord, backend: str, configurations: int) -> list[str]:
    config = record.config
    model = config["model"]
    return [
        f"# collscope train: Llama preset {config['preset']} "
        f"({model['parameters'] / 1e6:.1f} M parameters: hidden {model['hidden']}, "
        f"{model['layers']} layers, {model['heads']} heads, vocab {model['vocab']}), "
        f"seq {model['seq_len']} x batch {model['batch_size']} per rank, {config['dtype']}, "
        f"{config['parallel'].upper()} on {record.world_size} ranks ({backend}), "
        f"{configurations} configuration{'s' if configurations != 1 else ''}, "
        f"{config['warmup']} warm-up + {config['steps']} timed steps each",
        f"# Timing: {record.timing}",
        f"# Memory: {record.memory_method}",
    ]


def measured_line(index: int, total: int, record: TrainRecord) -> str:
    """One configuration, as soon as it is measured."""
    return (f"[{index}/{total}] {record.label}: step {record.step_time_ms:.1f} ms "
            f"(forward {record.forward_ms:.1f}, backward {record.backward_ms:.1f}, optimizer "
            f"{record.optimizer_ms:.1f}), no-sync {record.step_time_ms_nosync:.1f} ms, exposed "
            f"comm {record.exposed_comm_ms:.1f} ms{_ci(record)}, pure comm "
            f"{record.pure_comm_ms:.1f} ms for "
            f"{_mib(record.comm_bytes_per_step)}/step, overlap {_pct(record.overlap_fraction)}, "
            f"{record.tokens_per_s:,.0f} tokens/s, peak memory "
            f"{_mib(record.peak_memory_bytes)}{_estimate(record)}, loss {record.loss_first:.3f} -> "
            f"{record.loss_last:.3f}")


COLUMNS = (("rank", 4), ("configuration", 30), ("step ms", 9), ("IQR", 7),
           ("no-sync", 9), ("exposed", 9), ("pure comm", 10), ("overlap", 8),
           ("comm/step", 11), ("tokens/s", 10), ("peak mem", 10), ("speedup", 8))


def table(records: Sequence[TrainRecord]) -> list[str]:
    """Configurations ranked by median step time (fastest first); times in ms."""
    rows = analysis.rank_by_step_time([{"record": r, "step_time_ms": r.step_time_ms}
                                       for r in records])
    lines = ["# " + " ".join(f"{name:<{width}}" if i == 1 else f"{name:>{width}}"
                             for i, (name, width) in enumerate(COLUMNS))]
    for position, row in enumerate(rows, start=1):
        r: TrainRecord = row["record"]
        cells = [f"{position}", r.label[:30], f"{r.step_time_ms:.1f}",
                 f"{r.step_time_ms_p75 - r.step_time_ms_p25:.1f}",
                 f"{r.step_time_ms_nosync:.1f}", f"{r.exposed_comm_ms:.1f}",
                 f"{r.pure_comm_ms:.1f}",
                 _pct(r.overlap_fraction) + ("*" if r.overlap_clamped else ""),
                 _mib(r.comm_bytes_per_step), f"{r.tokens_per_s:,.0f}",
                 _mib(r.peak_memory_bytes),
                 "-" if r.speedup_vs_ddp_default is None else f"{r.speedup_vs_ddp_default:.2f}x"]
        lines.append("  " + " ".join(f"{cell:<{w}}" if i == 1 else f"{cell:>{w}}"
                              for i, (cell, (_, w)) in enumerate(zip(cells, COLUMNS))))
    return lines


def notes(records: Sequence[TrainRecord]) -> list[str]:
    lines = ["# exposed = median over steps of (synchronised step - step without gradient sync "
             "on the same batch), CI = distribution-free (order statistics); pure comm = the "
             "step's messages alone on the same group; overlap = 1 - exposed / pure"]
    if any(r.overlap_clamped for r in records):
        lines.append("# * overlap clamped to [0, 1]: the raw 1 - exposed / pure fell outside "
                     "(noise, or communication slowed by competing compute)")
    if any(r.comm_collective == "reduce_scatter" for r in records):
        lines.append("# FSDP: exposed and pure comm cover the gradient reduce-scatter; the "
                     "parameter all-gathers run in both steps and are not in these figures")
    ratio = analysis.drift([r.step_time_ms_nosync for r in records])
    if ratio > analysis.DRIFT_LIMIT:
        low = min(r.step_time_ms_nosync for r in records)
        high = max(r.step_time_ms_nosync for r in records)
        lines.append(f"# warning: the step without sync (the same compute in every row) ranged "
                     f"{low:.1f}-{high:.1f} ms across configurations: the machine's speed "
                     "drifted during the sweep (other jobs?), so step times compare poorly "
                     "between rows; exposed comm, measured pairwise within each row, holds")
    if any(r.speedup_vs_ddp_default is not None for r in records):
        lines.append("# speedup = DDP default (bucket_cap_mb=25, no hook) step time / this "
                     "configuration's")
    return lines


def recommendation(records: Sequence[TrainRecord], ranks_per_node: int | None,
                   hier_chunk_bytes: int = HIER_CHUNK_DEFAULT) -> str:
    from collscope.train.config import DDPKnobs

    rows = []
    for r in records:
        if r.config.get("parallel") != "ddp" or r.config.get("custom_hook"):
            continue
        knobs = DDPKnobs(bucket_cap_mb=r.config["bucket_cap_mb"],
                         gradient_as_bucket_view=r.config["gradient_as_bucket_view"],
                         static_graph=r.config["static_graph"],
                         comm_hook=r.config["comm_hook"])
        rows.append({"knobs": knobs, "step_time_ms": r.step_time_ms,
                     "step_time_ms_p25": r.step_time_ms_p25,
                     "step_time_ms_p75": r.step_time_ms_p75})
    drifted = analysis.drift([r.step_time_ms_nosync for r in records]) > analysis.DRIFT_LIMIT
    return analysis.recommendation(rows, ranks_per_node, drifted, hier_chunk_bytes)


class Reporter:
    """Rank 0's output: a line per configuration as measured, the ranked table, the JSONL."""

    def __init__(self, config: TrainConfig, session: Any, json_path: str | None,
                 launcher_name: str):
        self.config = config
        self.session = session
        self.launcher_name = launcher_name
        self.total = len(config.grid())
        self.count = 0
        self.json: Any = None
        self.failure: str | None = None    # the --json file failed while measuring
        self.table = json_path != "-"      # `--json -`: stdout carries the records only
        if json_path:
            self._open_json(json_path)

    def _print(self, line: str) -> None:
        if self.table:
            print(line, flush=True)

    def _write(self, record: dict[str, Any]) -> None:
        """A failed write ends the file, not the run (the peers go on measuring; the lines on
        stdout keep every result); the CLI says it at the end and exits 1."""
        from collscope.errors import OutputError

        if self.json is None:
            return
        try:
            self.json.write(record)
        except OutputError as error:
            self.failure = str(error)
            self.json = None

    def record(self, record: TrainRecord) -> None:
        if self.count == 0:
            for line in header(record, self.session.label, self.total):
                self._print(line)
        self.count += 1
        self._print(measured_line(self.count, self.total, record))
        self._write(record.to_dict())

    def _open_json(self, path: str) -> None:
        from collscope.records.jsonl import JsonlWriter
        from collscope.records.run import RunRecord
        from collscope.train.measure import timing_method

        self.json = JsonlWriter(path, "--json")
        self._write(RunRecord.for_session(
            "train", self.session, self.launcher_name,
            timing_method(self.session.device, self.config.parallel, self.config.steps),
            {"config": self.config.to_dict(),
             "grid": [vars(k) for k in self.config.grid()]}).to_dict())

    def finish(self, records: list[TrainRecord]) -> None:
        self._print("#")
        for line in table(records):
            self._print(line)
        for line in notes(records):
            self._print(line)
        if len(records) > 1 and self.config.parallel == "ddp":
            self._print(recommendation(
                records, self.config.ranks_per_node or self.session.layout.ranks_per_node,
                self.config.hier_chunk_bytes))

    def close(self) -> None:
        if self.json:
            self.json.close()
