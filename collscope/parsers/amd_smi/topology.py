"""``amd-smi topology``: the text tables (WEIGHT TABLE: ...) and --json."""

from __future__ import annotations

from typing import Any

from collscope.parsers.amd_smi.shapes import json_gpu_items, looks_like_json
from collscope.parsers.amd_smi.values import (
    BDF,
    TABLE_NAME,
    flatten,
    int_of,
)
from collscope.parsers.common import GPU_LABEL, LINK_TYPES, MAX_GPUS, Parsed, Topology, to_int


def _table_title(line: str) -> str | None:
    """'numa_bw' for 'NUMA BW TABLE:', None for other lines."""
    stripped = line.strip().rstrip(":").rstrip()
    if not stripped.upper().endswith(" TABLE"):
        return None
    name = stripped[:-6].strip()
    if not TABLE_NAME.fullmatch(name):
        return None
    return "_".join(name.lower().split())


def tables(text: str) -> list[tuple[str, list[tuple[int, str]]]]:
    """('weight', lines) for each 'WEIGHT TABLE:' style block, in order."""
    tables: list[tuple[str, list[tuple[int, str]]]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        title = _table_title(line)
        if title is not None:
            tables.append((title, []))
        elif tables and line.strip():
            tables[-1][1].append((lineno, line))
    return tables


class _Labels:
    """Row/column labels (BDFs or GPUn) -> GPU index, in order of first appearance."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def index(self, label: str) -> int | None:
        gpu = GPU_LABEL.match(label)
        if gpu:
            number = to_int(gpu.group(1))
            return number if number is not None and number < MAX_GPUS else None
        key = label.lower()
        if key not in self.names:
            if len(self.names) >= MAX_GPUS:
                return None
            self.names.append(key)
        return self.names.index(key)


def _is_label(token: str) -> bool:
    """Only BDFs and GPUn name GPUs; other header words ('bdf', 'bit_rate') do not."""
    return bool(BDF.match(token) or GPU_LABEL.match(token))


def link_type(cell: str) -> str | None:
    low = cell.strip().lower()
    if low.startswith("pci"):
        return "pcie"
    if low in LINK_TYPES:
        return low
    return None


def _topology_from_cells(
    n: int, cells: dict[str, dict[tuple[int, int], Any]], warnings: list[str]
) -> Topology:
    topo = Topology(gpus=n, numa_node=[None] * n)
    link = cells.get("link_type", {})
    for i in range(n):
        row: list[str] = []
        for j in range(n):
            if i == j:
                row.append("self")
                continue
            raw = link.get((i, j))
            kind = link_type(str(raw)) if raw is not None else None
            if kind is None:
                if raw is not None:
                    warnings.append(f"GPU{i}-GPU{j}: unknown link type {str(raw)[:20]!r}")
                kind = "unknown"
            row.append(kind)
        topo.link_type.append(row)
        topo.weight.append([int_of(cells.get("weight", {}).get((i, j))) for j in range(n)])
        topo.hops.append([int_of(cells.get("hops", {}).get((i, j))) for j in range(n)])
    for name, found in cells.items():
        if name in ("link_type", "weight", "hops"):
            continue
        topo.extra[name] = [
            [flatten(found[(i, j)]).get("", "") if (i, j) in found else "" for j in range(n)]
            for i in range(n)
        ]
    return topo


def _size(indices: list[int]) -> int:
    return min(max(indices) + 1, MAX_GPUS) if indices else 0


def _text_topology(text: str, warnings: list[str]) -> Topology:
    labels = _Labels()
    cells: dict[str, dict[tuple[int, int], Any]] = {}
    for name, lines in tables(text):
        found = cells.setdefault(name, {})
        columns: list[int | None] | None = None
        for lineno, line in lines:
            tokens = line.split()
            if columns is None:
                columns = [labels.index(token) if _is_label(token) else None for token in tokens]
                continue
            row = labels.index(tokens[0]) if _is_label(tokens[0]) else None
            values = tokens[1:]
            if row is None:
                warnings.append(f"line {lineno}: row label {tokens[0][:20]!r} not understood")
                continue
            if len(values) != len(columns):
                warnings.append(
                    f"line {lineno}: {name} row has {len(values)} cells for {len(columns)} columns"
                )
            for column, value in zip(columns, values, strict=False):  # short rows were warned about
                if column is not None:
                    found[(row, column)] = value
    for name in ("weight", "hops", "link_type"):
        if not cells.get(name):
            warnings.append(f"no {name.replace('_', ' ').upper()} TABLE found")
    n = _size([i for found in cells.values() for pair in found for i in pair])
    topo = _topology_from_cells(n, cells, warnings)
    if labels.names and all(BDF.match(name) for name in labels.names):
        topo.extra["bdf"] = [[labels.names[i]] if i < len(labels.names) else [""] for i in range(n)]
    return topo


_JSON_LINK_FIELDS = {
    "weight": "weight",
    "num_hops": "hops",
    "hops": "hops",
    "link_type": "link_type",
    "link_status": "access",
    "access": "access",
    "bandwidth": "numa_bw",
    "numa_bandwidth": "numa_bw",
    "coherent": "cache_coherancy",
    "atomics": "atomics",
    "dma": "dma",
    "bi_dir": "bi_directional",
}


def _json_topology(text: str, warnings: list[str]) -> Topology:
    labels = _Labels()
    cells: dict[str, dict[tuple[int, int], Any]] = {}
    bdfs: dict[int, str] = {}
    for i, item in json_gpu_items(text, warnings):
        if isinstance(item.get("bdf"), str):
            bdfs[i] = item["bdf"]
            labels.index(item["bdf"])
        links = item.get("links")
        if not isinstance(links, list):
            warnings.append(f"GPU {i}: no 'links' list")
            continue
        for link in links:
            if not isinstance(link, dict):
                continue
            j = int_of(link.get("gpu"))
            if j is None and isinstance(link.get("bdf"), str):
                j = labels.index(link["bdf"])
            if j is None or j < 0 or j >= MAX_GPUS:
                warnings.append(f"GPU {i}: link to {str(link.get('gpu'))[:20]!r} not understood")
                continue
            if isinstance(link.get("bdf"), str):
                bdfs.setdefault(j, link["bdf"])
            for key, value in link.items():
                name = _JSON_LINK_FIELDS.get(key)
                if name is not None:
                    cells.setdefault(name, {})[(i, j)] = value
    if not cells:
        warnings.append("no links found in topology JSON")
    n = _size(list(bdfs) + [i for found in cells.values() for pair in found for i in pair])
    topo = _topology_from_cells(n, cells, warnings)
    if bdfs:
        topo.extra["bdf"] = [[bdfs.get(i, "")] for i in range(n)]
    return topo


def parse_topology(text: str) -> Parsed[Topology]:
    """``amd-smi topology`` text tables or ``--json`` -> Topology.

    Weight, hops and link type fill the typed matrices ('self' on the diagonal); other
    tables (ACCESS, NUMA BW, ...) go to ``extra`` as text matrices under their snake-cased
    names ('access', 'numa_bw'), and ``extra['bdf']`` names each GPU (one single-cell row
    per GPU). amd-smi topology shows no per-GPU NUMA node, so ``numa_node`` stays None.
    """
    warnings: list[str] = []
    if looks_like_json(text):
        topo = _json_topology(text, warnings)
    else:
        topo = _text_topology(text, warnings)
    return Parsed(topo, warnings)
