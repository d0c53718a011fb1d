"""Names in a trace, decoded (pure): which GPU kernels are communication, what a kernel or an
annotation says about its collective (algorithm, protocol, dtype), and dtype spellings.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from collscope.collectives.names import ANNOTATION_PREFIXES, collective_from_annotation

# HolisticTraceAnalysis' rule (hta.utils.utils): a kernel is communication when its name
# matches ^nccl.*Kernel; collscope adds RCCL's own prefix and torch's symmetric-memory
# collectives (multimem / one-shot / two-shot all-reduce, ...), which are communication too.
_COMM_KERNEL = re.compile(
    r"^(nccl.*Kernel|rccl|ncclSymk)|(multimem|one_shot|two_shot)_(all_reduce|all_gather|"
    r"reduce_scatter|reduce)", re.IGNORECASE)
# HTA's non-compute kernels: copies, sets, synchronisation.
_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)|^dma")

# Kernel-name tokens.
_KERNEL_COLLECTIVES = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "sendrecv", "send": "sendrecv",
    "recv": "sendrecv", "alltoall": "alltoall",
}
_REDUCING = ("all_reduce", "reduce_scatter", "reduce")
ALGORITHMS = ("RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "COLLNET", "NVLS_TREE", "NVLS",
              "PAT")
PROTOCOLS = ("LL128", "LL", "SIMPLE")
# Kernel names are split at "_", so "int8_t" arrives as "int8" and "__nv_bfloat16" as "bfloat16".
_KERNEL_DTYPES = {
    "f32": "float", "float": "float", "f16": "half", "half": "half", "bf16": "bfloat16",
    "bfloat16": "bfloat16", "f64": "double", "double": "double", "i8": "int8", "int8": "int8",
    "u8": "uint8", "uint8": "uint8", "i32": "int32", "int32": "int32", "u32": "uint32",
    "uint32": "uint32", "i64": "int64", "int64": "int64", "u64": "uint64", "uint64": "uint64",
}


def is_comm_kernel(name: str) -> bool:
    return _COMM_KERNEL.search(name) is not None


def is_compute_kernel(name: str) -> bool:
    """A GPU kernel that is neither communication nor a copy, set or sync (HTA's rule)."""
    return not is_comm_kernel(name) and _NOT_COMPUTE.match(name) is None


@functools.lru_cache(maxsize=65536)
def kernel_kind(name: str) -> str:
    """"comm", "compute" or "other" (copies, sets, syncs); cached: a trace repeats a few
    thousand kernel names over and over."""
    if is_comm_kernel(name):
        return "comm"
    return "compute" if is_compute_kernel(name) else "other"


@dataclass(frozen=True)
class KernelInfo:
    """What a communication kernel's name says; None where it does not say."""

    collective: str | None
    algorithm: str | None
    protocol: str | None
    dtype: str | None


def decode_kernel(name: str) -> KernelInfo:
    """ncclKernel_AllReduce_RING_LL_Sum_float (NCCL < 2.19), ncclDevKernel_AllReduce_Sum_f32_
    RING_LL (2.19+), ncclDevKernel_SendRecv, RCCL's ncclDevKernel_Generic (nothing in the name),
    multimem_all_reduce_kernel<...> (symmetric memory)."""
    base = name.split("(", 1)[0].split("<", 1)[0]
    symmetric = re.search(r"(multimem|one_shot|two_shot)_(all_reduce|all_gather|"
                          r"reduce_scatter|reduce)", base)
    if symmetric:
        return KernelInfo(symmetric.group(2), symmetric.group(1).upper(), None, None)
    parts = base.split("_")
    if len(parts) < 2 or not parts[0].lower().startswith(("nccl", "rccl")):
        return KernelInfo(None, None, None, None)
    collective = _KERNEL_COLLECTIVES.get(parts[1].lower())
    rest = "_".join(parts[2:])
    algorithm = next((a for a in ALGORITHMS if re.search(rf"(^|_){a}(_|$)", rest)), None)
    protocol = next((p for p in PROTOCOLS if re.search(rf"(^|_){p}(_|$)", rest)), None)
    dtype = next((_KERNEL_DTYPES[t] for t in parts[2:] if t in _KERNEL_DTYPES), None)
    # Only reductions are typed by the user's dtype: NCCL moves the bytes of broadcasts,
    # gathers and send/recv as int8.
    return KernelInfo(collective, algorithm, protocol,
                      dtype if collective in _REDUCING else None)


def is_comm_annotation(name: str) -> bool:
    """A CPU span that issues or runs a collective (not record_param_comms itself)."""
    return name.startswith(ANNOTATION_PREFIXES) and collective_from_annotation(name) is not None
