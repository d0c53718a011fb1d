"""Data types by their nccl-tests names, with what the correctness check needs to know."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DtypeSpec:
    name: str           # as nccl-tests prints it in the type column
    torch_name: str     # attribute of the torch module
    size: int           # bytes per element
    floating: bool
    exact_limit: int    # largest integer magnitude the type holds exactly


DTYPES: dict[str, DtypeSpec] = {
    spec.name: spec
    for spec in (
        DtypeSpec("int8", "int8", 1, False, 127),
        DtypeSpec("uint8", "uint8", 1, False, 255),
        DtypeSpec("int32", "int32", 4, False, 2**31 - 1),
        DtypeSpec("int64", "int64", 8, False, 2**63 - 1),
        DtypeSpec("half", "float16", 2, True, 2**11),
        DtypeSpec("float", "float32", 4, True, 2**24),
        DtypeSpec("double", "float64", 8, True, 2**53),
        DtypeSpec("bfloat16", "bfloat16", 2, True, 2**8),
    )
}

DTYPE_ALIASES = {
    "char": "int8", "int": "int32", "float16": "half", "fp16": "half", "float32": "float",
    "fp32": "float", "float64": "double", "fp64": "double", "bf16": "bfloat16", "long": "int64",
}

OPS = ("sum", "prod", "min", "max", "avg")


def canonical_dtype(name: str) -> str | None:
    key = name.strip().lower()
    key = DTYPE_ALIASES.get(key, key)
    return key if key in DTYPES else None
