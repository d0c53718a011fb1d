"""`collscope doctor` configuration: one typed dataclass, validated on construction (no torch)."""

from __future__ import annotations

from dataclasses import dataclass, field

from collscope.doctor.probes import DEFAULT_TOOL_TIMEOUT_S
from collscope.errors import UsageError


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class DoctorConfig:
    json: bool = field(default=False, metadata=_help(
        'print {"findings": [...], "inventory": {...}} instead of the report'))
    collect: str | None = field(default=None, metadata=_help(
        "also write every raw output read to this .tar.gz bundle"))
    source: str | None = field(default=None, metadata=_help(
        "check a bundle (.tar.gz or directory) instead of this node"))
    selftest: bool = field(default=True, metadata=_help(
        "run the 2-rank all_reduce self-test"))
    all_ranks: bool = field(default=False, metadata=_help(
        "cluster mode: gather every node's facts to rank 0 and show what differs"))
    nproc: int | None = field(default=None, metadata=_help(
        "cluster mode without a launcher: spawn N local ranks"))
    backend: str = field(default="auto", metadata=_help(
        "cluster mode: process-group backend (auto = nccl/rccl with GPUs, else gloo)"))
    timeout_s: float = field(default=60.0, metadata=_help(
        "seconds a self-test or cluster exchange may wait before giving up"))
    tool_timeout_s: float = field(default=DEFAULT_TOOL_TIMEOUT_S, metadata=_help(
        "seconds each external tool (rocm-smi, ...) may run before it is killed"))

    def __post_init__(self) -> None:
        if self.source is not None and self.all_ranks:
            raise UsageError("--from: checks a bundle offline; it cannot be combined with "
                             "--all-ranks")
        if self.nproc is not None and not self.all_ranks:
            raise UsageError("--nproc: only with --all-ranks (the self-test always uses 2 "
                             "local ranks)")
        if self.nproc is not None and self.nproc < 1:
            raise UsageError(f"--nproc: {self.nproc} must be >= 1")
        if not self.timeout_s > 0:
            raise UsageError(f"--timeout: {self.timeout_s:g} must be a positive number of "
                             "seconds")
        if not self.tool_timeout_s > 0:
            raise UsageError(f"--tool-timeout: {self.tool_timeout_s:g} must be a positive "
                             "number of seconds")
        if self.collect is not None and not self.collect.strip():
            raise UsageError("--collect: give a file name, e.g. --collect node.tar.gz")
