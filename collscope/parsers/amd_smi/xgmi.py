"""``amd-smi xgmi``: the LINK METRIC TABLE and --json."""

from __future__ import annotations

import re
from typing import Any

from collscope.parsers.amd_smi.records import XgmiGpu
from collscope.parsers.amd_smi.shapes import json_gpu_items, looks_like_json
from collscope.parsers.amd_smi.topology import link_type, tables
from collscope.parsers.amd_smi.values import (
    BDF,
    CELL,
    MAX_DEPTH,
    RATE,
    STATUS_WORDS,
    bytes_of,
    rate_gbps,
    rate_of,
    text_of,
)
from collscope.parsers.common import GPU_LABEL, MAX_GPUS, Parsed, to_int


def _cell_bytes(cell: str) -> int | None:
    return None if cell.strip().upper() == "N/A" else bytes_of(cell, "KB")


def _text_xgmi(text: str, warnings: list[str]) -> dict[int, XgmiGpu]:
    gpus: dict[int, XgmiGpu] = {}
    for name, lines in tables(text):
        peers: list[str] = []
        current: XgmiGpu | None = None
        for lineno, line in lines:
            tokens = line.split()
            first = tokens[0]
            gpu = GPU_LABEL.match(first)
            if gpu is None and first.lower() in ("bdf", "gpu"):
                peers = [t for t in tokens if BDF.match(t) or GPU_LABEL.match(t)]
                continue
            if gpu is not None:
                index = to_int(gpu.group(1))
                if index is None or index >= MAX_GPUS:
                    warnings.append(f"line {lineno}: GPU label {first[:20]!r} out of range")
                    current = None
                    continue
                current = gpus.setdefault(index, XgmiGpu(index=index))
                rest = tokens[1:]
                if rest and BDF.match(rest[0]):
                    current.bdf = rest.pop(0)
                if "status" in name:
                    current.link_status = [STATUS_WORDS.get(t.lower(), t) for t in rest]
                    continue
                rates = [rate_of(*found) for found in RATE.findall(" ".join(rest))]
                if rates:
                    current.bit_rate_gbps = rates[0]
                if len(rates) > 1:
                    current.max_bandwidth_gbps = rates[1]
                if rest and re.fullmatch(r"[A-Za-z]+", rest[-1]):
                    current.link_type = link_type(rest[-1]) or rest[-1].lower()
                current.peer_bdfs = list(peers)
                continue
            direction = first.lower()
            if direction in ("read", "write") and current is not None:
                values = [
                    _cell_bytes(cell)
                    for cell in CELL.findall(line[line.lower().find(direction) + len(direction) :])
                ]
                if peers and len(values) != len(peers):
                    warnings.append(
                        f"line {lineno}: {len(values)} {direction} cells for {len(peers)} peers"
                    )
                if direction == "read":
                    current.read_bytes = values
                else:
                    current.write_bytes = values
                continue
            warnings.append(f"line {lineno}: not understood: {line.strip()[:60]!r}")
    return gpus


def _find(node: Any, key: str, depth: int = 0) -> Any:
    """First value under ``key`` anywhere below ``node`` (xgmi JSON nests differently by
    release: link_metrics may hold the rates or sit beside them)."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(node, dict):
        if key in node:
            return node[key]
        for value in node.values():
            found = _find(value, key, depth + 1)
            if found is not None:
                return found
    return None


def _peer_entries(node: Any) -> list[tuple[str, dict[str, Any]]]:
    """(peer bdf, {"read":..., "write":...}) from a list of links or a dict keyed by bdf."""
    links = _find(node, "links")
    if links is None:
        links = _find(node, "link_metrics")
    entries: list[tuple[str, dict[str, Any]]] = []
    if isinstance(links, list):
        for link in links:
            if isinstance(link, dict):
                entries.append((str(link.get("bdf", link.get("gpu", ""))), link))
    elif isinstance(links, dict):
        for peer, link in links.items():
            if isinstance(link, dict) and ("read" in link or "write" in link):
                entries.append((str(peer), link))
    return entries


def _json_xgmi(text: str, warnings: list[str]) -> dict[int, XgmiGpu]:
    gpus: dict[int, XgmiGpu] = {}
    for index, item in json_gpu_items(text, warnings):
        gpu = gpus.setdefault(index, XgmiGpu(index=index))
        gpu.bdf = text_of(item.get("bdf")) or gpu.bdf
        rate = _find(item, "bit_rate")
        if rate is not None:
            gpu.bit_rate_gbps = rate_gbps(rate)
        bandwidth = _find(item, "max_bandwidth")
        if bandwidth is not None:
            gpu.max_bandwidth_gbps = rate_gbps(bandwidth)
        kind = text_of(_find(item, "link_type"))
        if kind is not None:
            gpu.link_type = link_type(kind) or kind.lower()
        entries = _peer_entries(item)
        if entries:
            gpu.peer_bdfs = [peer for peer, _ in entries]
            gpu.read_bytes = [bytes_of(link.get("read"), "KB") for _, link in entries]
            gpu.write_bytes = [bytes_of(link.get("write"), "KB") for _, link in entries]
        status = _find(item, "link_status")
        if isinstance(status, list):
            gpu.link_status = [STATUS_WORDS.get(str(s).lower(), str(s)) for s in status]
        elif isinstance(status, str):
            gpu.link_status = [STATUS_WORDS.get(s.lower(), s) for s in status.split()]
    return gpus


def parse_xgmi(text: str) -> Parsed[list[XgmiGpu]]:
    """``amd-smi xgmi`` (metric table, link status table) text or ``--json``.

    Read/write volumes are bytes (amd-smi's KB/MB/GB are binary); rates are Gb/s.
    """
    warnings: list[str] = []
    if looks_like_json(text):
        gpus = _json_xgmi(text, warnings)
    else:
        gpus = _text_xgmi(text, warnings)
    if not gpus:
        warnings.append("no GPU rows found in xgmi output")
    return Parsed([gpus[index] for index in sorted(gpus)], warnings)
