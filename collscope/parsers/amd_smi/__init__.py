"""Parsers for amd-smi output: static, topology, xgmi and metric, text and --json.

amd-smi's text form is an indented tree ('GPU: 0', then 'ASIC:', then 'MARKET_NAME: ...');
its JSON form is the same tree with lower-case keys, quantities as {"value", "unit"} (or bare
numbers in older releases) and, from ROCm 6.4 on, wrapped in {"gpu_data": [...]}. Both are
read into one nested-dict shape first, so each command is mapped once. Topology and xgmi
are tables ('WEIGHT TABLE:', 'LINK METRIC TABLE:') in text form.

Nothing here raises on odd input: what is not understood becomes a warning. Modules: values
(constants, quantity helpers), shapes (text tree and JSON into one nested dict), gpus (static,
metric), topology, xgmi, records.
"""

from __future__ import annotations

from collscope.parsers.amd_smi.gpus import parse_metric, parse_static
from collscope.parsers.amd_smi.records import GpuMetrics, XgmiGpu
from collscope.parsers.amd_smi.topology import parse_topology
from collscope.parsers.amd_smi.xgmi import parse_xgmi
from collscope.parsers.common import MAX_GPUS

__all__ = ["MAX_GPUS", "GpuMetrics", "XgmiGpu", "parse_metric", "parse_static", "parse_topology",
           "parse_xgmi"]
