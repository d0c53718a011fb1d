"""`collscope doctor` configuration: one typed dataclass, validated on construction (no torch).
Each field is also its flag (collscope.config_flags): name, default and help live here only."""

from __future__ import annotations

from dataclasses import dataclass

from collscope.config_flags import backend_flag, flag, invalid
from collscope.doctor.probes import DEFAULT_TOOL_TIMEOUT_S

# --json with no FILE: the one JSON document doctor printed before --json took a FILE (kept,
# deprecated, for scripts that read it).
JSON_DOCUMENT = "<document>"


@dataclass
class DoctorConfig:
    json: str | None = flag(
        None, "--json", metavar="FILE", nargs="?", const=JSON_DOCUMENT,
        help="write JSON Lines: a run record, one doctor_finding per finding (worst first), "
             "one doctor_node per node; '-' for stdout, which then carries only them "
             '(--json without FILE, deprecated: one {"findings": [...], "inventory": {...}} '
             "document on stdout)")
    collect: str | None = flag(
        None, "--collect", metavar="FILE.tar.gz",
        help="also save every raw output read as a bundle (with --all-ranks one per node: "
             "{node} and {host} in the name are replaced)")
    source: str | None = flag(None, "--from", metavar="BUNDLE",
                              help="check a bundle (.tar.gz or directory), or one saved tool "
                                   "output (plain, .gz, .bz2, .xz), instead of this node")
    selftest: bool = flag(True, "--no-selftest", negate=True,
                          help="skip the 2-rank all_reduce self-test")
    all_ranks: bool = flag(False, "--all-ranks",
                           help="cluster mode: under torchrun/srun/mpirun gather every node's "
                                "facts to rank 0 and show what differs between nodes")
    nproc: int | None = flag(None, "--nproc", type=int,
                             help="with --all-ranks and no launcher: spawn N local ranks")
    backend: str = backend_flag("with --all-ranks: auto (nccl/rccl with GPUs, else gloo), nccl, "
                                "gloo")
    timeout_s: float = flag(60.0, "--timeout", type=float, metavar="S",
                            help="seconds the self-test or the cluster exchange may wait")
    tool_timeout_s: float = flag(DEFAULT_TOOL_TIMEOUT_S, "--tool-timeout", type=float,
                                 metavar="S", help="seconds each external tool may run before "
                                                   "it is killed")

    @property
    def json_document(self) -> bool:
        """--json without FILE: the old single document on stdout (said deprecated once)."""
        return self.json == JSON_DOCUMENT

    def __post_init__(self) -> None:
        if self.source is not None and self.all_ranks:
            raise invalid(self, "source", "checks a bundle offline; it cannot be combined "
                                          "with --all-ranks")
        if self.nproc is not None and not self.all_ranks:
            raise invalid(self, "nproc", "only with --all-ranks (the self-test always uses 2 "
                                         "local ranks)")
        if self.nproc is not None and self.nproc < 1:
            raise invalid(self, "nproc", f"{self.nproc} must be >= 1")
        if not self.timeout_s > 0:
            raise invalid(self, "timeout_s", f"{self.timeout_s:g} must be a positive number "
                                             "of seconds")
        if not self.tool_timeout_s > 0:
            raise invalid(self, "tool_timeout_s", f"{self.tool_timeout_s:g} must be a "
                                                  "positive number of seconds")
        if self.collect is not None and not self.collect.strip():
            raise invalid(self, "collect", "give a file name, e.g. --collect node.tar.gz")


@dataclass
class DoctorModes:
    """What doctor does instead of checking: explain one check, or run one rank of the GPU
    self-test (internal: doctor spawns itself with these, collscope.doctor.selftest)."""

    explain: str | None = flag(None, "--explain", metavar="ID",
                               help="print what check ID looks at and why")
    selftest_rank: str | None = flag(None, "--selftest-rank", metavar="FILE", hidden=True)
    selftest_timeout: float = flag(60.0, "--selftest-timeout", type=float, hidden=True)
