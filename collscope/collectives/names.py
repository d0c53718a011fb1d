"""The names torch and the communication libraries give collectives and dtypes, as
collscope's: profiler annotations and Flight Recorder profiling names ("nccl:all_reduce",
"c10d::_allgather_base_"), c10 dtype spellings ("BFloat16", "c10::Half"). Read by trace (the
profiler's traces) and by watch's agent inside the user's job, which must not import trace."""

from __future__ import annotations

from collscope.collectives.dtypes import DTYPES, canonical_dtype

# Spellings of dtypes in record_param_comms "dtype" and in "Input type" (c10 / C++ names).
_DTYPE_SPELLINGS = {
    "float": "float", "float32": "float", "double": "double", "half": "half",
    "c10::half": "half", "bfloat16": "bfloat16", "c10::bfloat16": "bfloat16", "byte": "uint8",
    "unsigned char": "uint8", "char": "int8", "signed char": "int8", "int": "int32",
    "long": "int64", "long int": "int64", "int64_t": "int64", "bool": "uint8",
    "float8_e4m3fn": "uint8", "float8_e5m2": "uint8", "c10::float8_e4m3fn": "uint8",
}
DTYPE_SIZES = {**{name: spec.size for name, spec in DTYPES.items()}, "uint32": 4, "uint64": 8}

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
ANNOTATION_PREFIXES = ("nccl:", "rccl:", "gloo:", "mpi:", "ucc:", "c10d::")


def collective_from_annotation(name: str) -> str | None:
    """The nccl-tests collective name of "allreduce", "c10d::_allgather_base_",
    "nccl:all_to_all", "gloo:all_reduce", "reduce_scatter_tensor_coalesced",
    "nccl:_broadcast_oop" (NCCL's out-of-place broadcast and reduce); None for
    anything else ("wait", "coalesced", "c10d::barrier" is "barrier")."""
    text = name.strip().lower()
    for prefix in ANNOTATION_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    text = text.strip("_")
    for suffix in _SUFFIXES:
        if text.endswith(suffix) and text != suffix.strip("_"):
            text = text[: -len(suffix)]
            break
    return _ANNOTATION_COLLECTIVES.get(text.replace("_", ""))


def canonical_trace_dtype(text: object) -> str | None:
    """collscope's dtype name for "Float", "BFloat16", "c10::Half", "unsigned char", ..."""
    if not isinstance(text, str) or not text:
        return None
    key = text.strip().lower()
    return _DTYPE_SPELLINGS.get(key) or canonical_dtype(key)
