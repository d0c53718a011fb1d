"""Parsers for rocm-smi output: product names, topology, VRAM, the concise table and --json.

rocm-smi prints two kinds of block: per-GPU ``GPU[i] : key: value`` lines, and GPU x GPU
matrices under ``==== title ====`` banners. Its column sets and key capitalisation drifted
across ROCm releases, so keys are matched case-insensitively, tables are mapped by their
header, and anything not understood becomes a warning instead of an exception.
"""

from __future__ import annotations

from collscope.parsers.common import MAX_GPUS
from collscope.parsers.rocm_smi.blocks import parse_productname, parse_showmeminfo, parse_showuse
from collscope.parsers.rocm_smi.concise import parse_concise
from collscope.parsers.rocm_smi.json_output import (
    parse_json,
    parse_json_status,
    parse_json_topology,
)
from collscope.parsers.rocm_smi.records import GpuStatus
from collscope.parsers.rocm_smi.topology import parse_showtopo

__all__ = ["MAX_GPUS", "GpuStatus", "parse_concise", "parse_json", "parse_json_status",
           "parse_json_topology", "parse_productname", "parse_showmeminfo", "parse_showtopo",
           "parse_showuse"]
