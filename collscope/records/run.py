"""The ``run`` record that opens every collscope JSON Lines output: who measured what, where,
with which software; and ``SCHEMA_VERSION``, which every record kind shares (records/)."""

from __future__ import annotations

import os
import sys
from typing import Any, ClassVar

from collscope.records.base import Record

# Which names look secret and how values are hidden: collscope/redact.py (one list for all).
from collscope.redact import redact_argv, shown_env

SCHEMA_VERSION = 1

# Environment variables that shape collective performance; recorded in the run record.
RECORDED_ENV_PREFIXES = ("NCCL_", "RCCL_", "HSA_", "UCX_", "GLOO_", "TORCH_NCCL_", "HIP_", "ROCR_",
                         "CUDA_VISIBLE_DEVICES", "MIOPEN_")


def recorded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The communication-related environment variables, secrets left out."""
    environ = dict(os.environ) if environ is None else environ
    return shown_env({name: value for name, value in sorted(environ.items())
                      if name.startswith(RECORDED_ENV_PREFIXES)})


class RunRecord(Record, tag="run"):
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
    extra: dict[str, Any] = {}
    schema_version: int = SCHEMA_VERSION

    kind_before: ClassVar[str | None] = "schema_version"
    opens_run: ClassVar[bool] = True

    @classmethod
    def create(cls, command: str, *, launcher: str, backend: str, world_size: int, nodes: int,
               ranks_per_node: int, hosts: list[str], devices: list[dict[str, Any]],
               timing: str, extra: dict[str, Any], versions: dict[str, str | None],
               started_at: float | None = None, env: dict[str, str] | None = None,
               argv: list[str] | None = None) -> RunRecord:
        """The one way to make a run record: collscope's version, the command line as typed,
        the recorded environment and the start time are filled in the same way for all
        (``env``/``argv`` given: a command that records another job's, e.g. trace: none)."""
        import time

        from collscope import __version__

        return cls(command=command, collscope_version=__version__,
                   argv=redact_argv(["collscope", *sys.argv[1:]] if argv is None else argv),
                   launcher=launcher, backend=backend,
                   world_size=world_size, nodes=nodes, ranks_per_node=ranks_per_node,
                   hosts=hosts, devices=devices, versions=versions,
                   env=recorded_env() if env is None else env,
                   timing=timing, started_at=time.time() if started_at is None else started_at,
                   extra=extra)

    @classmethod
    def for_session(cls, command: str, session: Any, launcher: str, timing: str,
                    extra: dict[str, Any], versions: dict[str, str | None] | None = None,
                    started_at: float | None = None) -> RunRecord:
        """The run record of a measuring command (bench, train, overlap, links) on its
        Session."""
        from collscope.versions import library_versions

        layout = session.layout
        return cls.create(command, launcher=launcher, backend=session.label,
                          world_size=session.world_size, nodes=layout.nodes,
                          ranks_per_node=layout.ranks_per_node, hosts=layout.hosts,
                          devices=layout.devices, timing=timing, extra=extra,
                          versions=library_versions() if versions is None else versions,
                          started_at=started_at)
