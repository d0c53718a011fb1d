"""The versioned record schema shared by bench, train, monitor, report and import.

Every command that measures writes JSON Lines: one ``{"kind": "run", ...}`` record with the
context, then one record per measurement, each flushed as soon as it exists so that a crash
loses nothing already measured. Field names and units are public interface: change them only
together with ``SCHEMA_VERSION``.

Units are in the field names: ``_us`` microseconds, ``_gbs`` GB/s with GB = 1e9 bytes,
``_bytes`` bytes.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import asdict, dataclass, field, fields
from typing import IO, Any

SCHEMA_VERSION = 1

# Environment variables that shape collective performance; recorded in the run record.
RECORDED_ENV_PREFIXES = ("NCCL_", "RCCL_", "HSA_", "UCX_", "GLOO_", "TORCH_NCCL_", "HIP_", "ROCR_",
                         "CUDA_VISIBLE_DEVICES", "MIOPEN_")
# Names that suggest a secret: such variables are never printed, recorded or bundled.
SECRET_NAME_PARTS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def recorded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The communication-related environment variables, secrets left out."""
    environ = dict(os.environ) if environ is None else environ
    return {
        name: value
        for name, value in sorted(environ.items())
        if name.startswith(RECORDED_ENV_PREFIXES) and not is_secret_name(name)
    }


@dataclass
class RunRecord:
    """Context of one run: who measured what, where, with which software."""

    command: str                      # "bench", "train", "import", ...
    collscope_version: str
    argv: list[str]
    launcher: str                     # torchrun, slurm, openmpi, pmi, local, import
    backend: str                      # gloo, nccl, rccl, mpi, ucc
    world_size: int
    nodes: int
    ranks_per_node: int
    hosts: list[str]
    devices: list[dict[str, Any]]     # per rank: rank, host, node, local_rank, device, name
    versions: dict[str, str | None]   # torch, hip, cuda, nccl (or rccl), python, ...
    env: dict[str, str]
    timing: str = ""                  # how every time in this run was measured
    started_at: float = 0.0           # seconds since the epoch
    extra: dict[str, Any] = field(default_factory=dict)
    kind: str = "run"
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def create(cls, command: str, *, launcher: str, backend: str, world_size: int, nodes: int,
               ranks_per_node: int, hosts: list[str], devices: list[dict[str, Any]],
               timing: str, extra: dict[str, Any], versions: dict[str, str | None],
               started_at: float | None = None) -> RunRecord:
        """The one way to make a run record: collscope's version, the command line as typed,
        the recorded environment and the start time are filled in the same way for all."""
        import sys
        import time

        from collscope import __version__

        return cls(command=command, collscope_version=__version__,
                   argv=["collscope", *sys.argv[1:]], launcher=launcher, backend=backend,
                   world_size=world_size, nodes=nodes, ranks_per_node=ranks_per_node,
                   hosts=hosts, devices=devices, versions=versions, env=recorded_env(),
                   timing=timing, started_at=time.time() if started_at is None else started_at,
                   extra=extra)

    @classmethod
    def for_session(cls, command: str, session: Any, launcher: str, timing: str,
                    extra: dict[str, Any], versions: dict[str, str | None] | None = None,
                    ) -> RunRecord:
        """The run record of a measuring command (bench, train, overlap) on its Session."""
        from collscope.versions import library_versions

        layout = session.layout
        return cls.create(command, launcher=launcher, backend=session.label,
                          world_size=session.world_size, nodes=layout.nodes,
                          ranks_per_node=layout.ranks_per_node, hosts=layout.hosts,
                          devices=layout.devices, timing=timing, extra=extra,
                          versions=library_versions() if versions is None else versions)


@dataclass
class BenchResult:
    """One collective x dtype x op x size x placement measurement.

    ``time_us`` is the mean time per operation over the timed loop (as nccl-tests prints it);
    the percentiles are over per-iteration times. Across ranks each is combined by
    ``average`` (rank0, mean, min or max). ``wrong`` is the number of mismatched elements summed
    over ranks, or None where the placement cannot be verified (nccl-tests prints N/A).
    """

    collective: str
    size_bytes: int
    count: int
    dtype: str
    op: str
    root: int
    in_place: bool
    world_size: int
    iters: int
    time_us: float
    time_us_p50: float | None    # None where unknown (imported nccl-tests logs)
    time_us_p95: float | None
    time_us_min: float | None
    time_us_max: float | None
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None
    algo: str = "flat"
    average: str = "mean"
    max_error: float | None = None
    kind: str = "result"
    # Relative half-width of the 95% CI of the median per-iteration time (max over ranks;
    # None below 6 iterations or for imported logs), and whether an adaptive run's time
    # budget ended before --target-precision was reached.
    ci_halfwidth: float | None = None
    budget_exhausted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchResult:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


CSV_COLUMNS = [f.name for f in fields(BenchResult) if f.name != "kind"]


class JsonlWriter:
    """Appends records as JSON Lines, flushing each one so a crash loses nothing written."""

    def __init__(self, path: str | os.PathLike[str]):
        self._file: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


class CsvWriter:
    """One row per BenchResult, flushed per row."""

    def __init__(self, path: str | os.PathLike[str]):
        self._file: IO[str] = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115
        self._csv = csv.DictWriter(self._file, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        self._csv.writeheader()
        self._file.flush()

    def write(self, result: BenchResult) -> None:
        self._csv.writerow(result.to_dict())
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_jsonl(text: str) -> list[dict[str, Any]]:
    """Records of a JSON Lines text; blank lines skipped."""
    return [json.loads(line) for line in io.StringIO(text) if line.strip()]
