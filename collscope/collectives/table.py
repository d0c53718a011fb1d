"""The collective table: byte accounting and bus-bandwidth factors, exactly as nccl-tests.

Pure (no torch), so the log importer and report can use it too.

nccl-tests definitions (doc/PERFORMANCE.md of nccl-tests):
  algbw = S / t, with S the "size" column: the bytes of the full buffer
          (all_gather, reduce_scatter, alltoall: the whole gathered/scattered buffer,
          count x nranks x element size; the others: count x element size);
  busbw = algbw x factor, factor = 2(n-1)/n for all_reduce, (n-1)/n for all_gather,
          reduce_scatter and alltoall, 1 for broadcast, reduce and sendrecv.
GB/s means 1e9 bytes per second.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CollectiveSpec:
    name: str
    reduces: bool           # takes a reduction op (-o)
    rooted: bool            # takes a root rank (-r)
    chunked: bool           # size = per-rank count x world size x element size
    out_of_place: bool      # torch.distributed has an out-of-place form of it
    verifies_in_place: bool  # nccl-tests checks the in-place result (it prints N/A otherwise)

    def bus_factor(self, world_size: int) -> float:
        n = world_size
        if self.name == "all_reduce":
            return 2.0 * (n - 1) / n
        if self.name in ("all_gather", "reduce_scatter", "alltoall"):
            return (n - 1) / n
        return 1.0

    def count_and_size(self, requested_bytes: int, element_size: int,
                       world_size: int) -> tuple[int, int]:
        """(count column, size column) for a requested size, rounded down as nccl-tests does.

        The count column of chunked collectives is the per-rank count (nccl-tests prints
        52428 for a 33553920-byte all_gather of doubles on 80 ranks).
        """
        if self.chunked:
            count = requested_bytes // (element_size * world_size)
            return count, count * element_size * world_size
        count = requested_bytes // element_size
        return count, count * element_size


# One row per collective, every row the same shape on purpose (a table, not repeated logic).
COLLECTIVES: dict[str, CollectiveSpec] = {
    spec.name: spec
    for spec in (
        CollectiveSpec("all_reduce", reduces=True, rooted=False, chunked=False,
                       out_of_place=False, verifies_in_place=True),
        CollectiveSpec("all_gather", reduces=False, rooted=False, chunked=True,
                       out_of_place=True, verifies_in_place=True),
        CollectiveSpec("reduce_scatter", reduces=True, rooted=False, chunked=True,
                       out_of_place=True, verifies_in_place=True),
        CollectiveSpec("broadcast", reduces=False, rooted=True, chunked=False,
                       out_of_place=False, verifies_in_place=True),
        CollectiveSpec("reduce", reduces=True, rooted=True, chunked=False,
                       out_of_place=False, verifies_in_place=True),
        CollectiveSpec("alltoall", reduces=False, rooted=False, chunked=True,
                       out_of_place=True, verifies_in_place=False),
        CollectiveSpec("sendrecv", reduces=False, rooted=False, chunked=False,
                       out_of_place=True, verifies_in_place=False),
    )
}

# Names nccl-tests binaries and users use for the same collectives.
ALIASES = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "all_to_all": "alltoall", "alltoall_single": "alltoall", "send_recv": "sendrecv",
    "bcast": "broadcast",
}


def canonical_name(name: str) -> str | None:
    """Collective name from a user's or a log's spelling (``all_reduce_perf`` included)."""
    key = name.strip().lower().removesuffix("_perf").replace("-", "_")
    key = ALIASES.get(key, key)
    return key if key in COLLECTIVES else None


def bus_factor(collective: str, world_size: int) -> float:
    return COLLECTIVES[collective].bus_factor(world_size)


def bandwidths(size_bytes: int, time_us: float, collective: str,
               world_size: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (1e9 B/s) for ``size_bytes`` moved in ``time_us``."""
    if time_us <= 0:
        return 0.0, 0.0
    algbw = size_bytes / (time_us * 1e-6) / 1e9
    return algbw, algbw * bus_factor(collective, world_size)
