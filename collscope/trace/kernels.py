"""Names in a trace, decoded (pure): which GPU kernels are communication, what a kernel or an
annotation says about its collective (algorithm, protocol, dtype), and dtype spellings.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from collscope.collectives.dtypes import DTYPES, canonical_dtype

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
# Spellings of dtypes in record_param_comms "dtype" and in "Input type" (c10 / C++ names).
_DTYPE_SPELLINGS = {
    "float": "float", "float32": "float", "double": "double", "half": "half",
    "c10::half": "half", "bfloat16": "bfloat16", "c10::bfloat16": "bfloat16", "byte": "uint8",
    "unsigned char": "uint8", "char": "int8", "signed char": "int8", "int": "int32",
    "long": "int64", "long int": "int64", "int64_t": "int64", "bool": "uint8",
    "float8_e4m3fn": "uint8", "float8_e5m2": "uint8", "c10::float8_e4m3fn": "uint8",
}
DTYPE_SIZES = {**{name: spec.size for name, spec in DTYPES.items()}, "uint32": 4, "uint64": 8}


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


_SUFFIXES = ("_into_tensor_coalesced", "_tensor_coalesced", "_into_tensor", "_coalesced",
             "_tensor", "_base", "_single", "_oop")
_ANNOTATION_COLLECTIVES = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce", "alltoall": "alltoall",
    "alltoallv": "alltoall", "send": "sendrecv", "recv": "sendrecv", "sendrecv": "sendrecv",
    "barrier": "barrier", "gather": "gather", "scatter": "scatter", "allgathercoalesced":
    "all_gather", "allreducecoalesced": "all_reduce", "recvanysource": "sendrecv",
}
# Annotation names that are communication spans (CPU side): c10d ops, backend spans.
_ANNOTATION_PREFIXES = ("nccl:", "rccl:", "gloo:", "mpi:", "ucc:", "c10d::")


def collective_from_annotation(name: str) -> str | None:
    """The nccl-tests collective name of "allreduce", "c10d::_allgather_base_",
    "nccl:all_to_all", "gloo:all_reduce", "reduce_scatter_tensor_coalesced",
    "nccl:_broadcast_oop" (NCCL's out-of-place broadcast and reduce); None for
    anything else ("wait", "coalesced", "c10d::barrier" is "barrier")."""
    text = name.strip().lower()
    for prefix in _ANNOTATION_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    text = text.strip("_")
    for suffix in _SUFFIXES:
        if text.endswith(suffix) and text != suffix.strip("_"):
            text = text[: -len(suffix)]
            break
    return _ANNOTATION_COLLECTIVES.get(text.replace("_", ""))


def is_comm_annotation(name: str) -> bool:
    """A CPU span that issues or runs a collective (not record_param_comms itself)."""
    return name.startswith(_ANNOTATION_PREFIXES) and collective_from_annotation(name) is not None


def canonical_trace_dtype(text: object) -> str | None:
    """collscope's dtype name for "Float", "BFloat16", "c10::Half", "unsigned char", ..."""
    if not isinstance(text, str) or not text:
        return None
    key = text.strip().lower()
    return _DTYPE_SPELLINGS.get(key) or canonical_dtype(key)
