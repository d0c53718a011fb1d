"""Parsers for amd-smi output: static, topology, xgmi and metric, text and --json.

amd-smi's text form is an indented tree ('GPU: 0', then 'ASIC:', then 'MARKET_NAME: ...');
its JSON form is the same tree with lower-case keys, quantities as {"value", "unit"} (or bare
numbers in older releases) and, from ROCm 6.4 on, wrapped in {"gpu_data": [...]}. Both are
read into one nested-dict shape first, so each command is mapped once. Topology and xgmi
are tables ('WEIGHT TABLE:', 'LINK METRIC TABLE:') in text form.

Nothing here raises on odd input: what is not understood becomes a warning.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from collscope.parsers.common import LINK_TYPES, GpuInfo, Parsed, Topology, to_int

# Indices above this are damaged text, not hardware: the largest node today shows 64 GPUs
# (8 MI300X in CPX mode). Matrices are n x n, so a typo such as GPU[99999999] must not size them.
MAX_GPUS = 256
# Nesting deeper than any amd-smi output; guards the recursive walks against hostile JSON.
_MAX_DEPTH = 24

# Both patterns are written so that no part can match the same text two ways: long runs of
# blanks or digits in damaged input must not make them backtrack (quadratic or worse).
_KV = re.compile(
    r"^(?P<indent> *)(?P<key>[A-Za-z0-9_][A-Za-z0-9_ ./()%#+-]*?):(?:\s(?P<value>.*))?$"
)
_QUANTITY = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(.*)$")
_BDF = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_GPU_LABEL = re.compile(r"^GPU(\d+)$", re.IGNORECASE)
_TABLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 _/-]*")
_CELL = re.compile(
    r"N/A|(?<![\d.])[-+]?\d+(?:\.\d+)?\s*[KMGTP]?i?B\b|[-+]?\d+(?:\.\d+)?", re.IGNORECASE
)
_RATE = re.compile(r"(?<![\d.])([-+]?\d+(?:\.\d+)?)\s*([KMGT]?)(b|B)/s")

_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1024,
    "kib": 1024,
    "mb": 1024**2,
    "mib": 1024**2,
    "gb": 1024**3,
    "gib": 1024**3,
    "tb": 1024**4,
    "tib": 1024**4,
    "pb": 1024**5,
}
_STATUS_WORDS = {
    "u": "up",
    "up": "up",
    "d": "down",
    "down": "down",
    "x": "disabled",
    "disabled": "disabled",
    "self": "self",
    "n/a": "n/a",
}


# --------------------------------------------------------------------------- records


@dataclass
class GpuMetrics:
    """One GPU from ``amd-smi metric``; units in the names, None where not reported.

    Activities are percentages; VRAM is in bytes (amd-smi prints MiB as 'MB'); PCIe
    bandwidth in Mb/s as amd-smi reports it. Every leaf as printed is also in ``extra``
    under its dotted path ('pcie.max_packet_size').
    """

    index: int
    gfx_activity_percent: float | None = None
    umc_activity_percent: float | None = None
    mm_activity_percent: float | None = None
    vcn_activity_percent: list[float | None] = field(default_factory=list)
    jpeg_activity_percent: list[float | None] = field(default_factory=list)
    power_w: float | None = None
    temperature_edge_c: float | None = None
    temperature_hotspot_c: float | None = None
    temperature_mem_c: float | None = None
    vram_total_bytes: int | None = None
    vram_used_bytes: int | None = None
    pcie_width: int | None = None
    pcie_speed_gts: float | None = None
    pcie_bandwidth_mbps: float | None = None
    pcie_replay_count: int | None = None
    pcie_replay_rollover_count: int | None = None
    pcie_l0_to_recovery_count: int | None = None
    pcie_nak_sent_count: int | None = None
    pcie_nak_received_count: int | None = None
    ecc_correctable_count: int | None = None
    ecc_uncorrectable_count: int | None = None
    energy_j: float | None = None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class XgmiGpu:
    """One GPU's row of ``amd-smi xgmi``: link rate and the data moved to/from each peer.

    ``read_bytes`` / ``write_bytes`` follow ``peer_bdfs`` (the table's column order, which
    amd-smi prints in GPU order); None where the tool prints N/A (the GPU itself).
    ``link_status`` holds one entry per xGMI link ('up', 'down', 'disabled', or the text as
    printed when unknown).
    """

    index: int
    bdf: str | None = None
    bit_rate_gbps: float | None = None
    max_bandwidth_gbps: float | None = None
    link_type: str | None = None
    peer_bdfs: list[str] = field(default_factory=list)
    read_bytes: list[int | None] = field(default_factory=list)
    write_bytes: list[int | None] = field(default_factory=list)
    link_status: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- value helpers


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _quantity(value: Any) -> tuple[float | None, str]:
    """(number, unit) from '16 GT/s', {"value": 16, "unit": "GT/s"}, 16 or 'N/A'."""
    if isinstance(value, dict):
        if "value" not in value:
            return None, ""
        number, unit = _quantity(value["value"])
        given = value.get("unit")
        return number, given if isinstance(given, str) else unit
    if isinstance(value, bool):
        return None, ""
    if isinstance(value, (int, float)):
        try:
            return _finite(float(value)), ""
        except OverflowError:
            return None, ""
    if isinstance(value, str):
        match = _QUANTITY.match(value)
        if not match:
            return None, ""
        try:
            return _finite(float(match.group(1))), match.group(2).strip()
        except (ValueError, OverflowError):
            return None, ""
    return None, ""


def _float(value: Any) -> float | None:
    return _quantity(value)[0]


def _int(value: Any) -> int | None:
    number = _float(value)
    if number is None or abs(number) > 2**63:
        return None
    return int(number)


def _bytes(value: Any, default_unit: str = "B") -> int | None:
    """Bytes from a size; amd-smi's 'MB'/'KB' are binary (196592 MB is 192 GiB)."""
    number, unit = _quantity(value)
    if number is None:
        return None
    factor = _BYTE_UNITS.get((unit or default_unit).strip().lower())
    if factor is None:
        return None
    total = number * factor
    return int(total) if math.isfinite(total) and abs(total) < 2**63 else None


def _rate_gbps(value: Any) -> float | None:
    """Gb/s from '32 Gb/s', {"value": 32, "unit": "Gb/s"}; Mb/s and GB/s are converted."""
    number, unit = _quantity(value)
    if number is None:
        return None
    match = re.fullmatch(r"([KMGT]?)(b|B)/s", unit.strip())
    if not match:
        return number  # no unit: amd-smi's default for these is Gb/s
    scale = {"": 1e-9, "K": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}[match.group(1)]
    if match.group(2) == "B":
        scale *= 8
    return _finite(number * scale)


def _rate(number: str, prefix: str, bit: str) -> float | None:
    """Gb/s from the pieces of '32 Gb/s' as _RATE splits them."""
    return _rate_gbps({"value": number, "unit": f"{prefix}{bit}/s"})


def _text(value: Any) -> str | None:
    """A printable scalar, or None for N/A, empty, objects and lists."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    if not text or text.upper() in ("N/A", "NA", "NONE"):
        return None
    return text


def _list(value: Any) -> list[float | None]:
    """Per-engine values from '[0 %, 0 %]' or a JSON list; [] when not reported."""
    if isinstance(value, list):
        return [_float(item) for item in value]
    if isinstance(value, str) and value.strip().startswith("["):
        inner = value.strip().strip("[]")
        return [_float(part) for part in inner.split(",") if part.strip()]
    return []


def _get(node: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _missing(value: Any) -> bool:
    if isinstance(value, dict) and "value" in value:
        value = value["value"]
    return value is None or (isinstance(value, str) and value.strip().upper() in ("", "N/A"))


def _first(node: Any, *paths: tuple[str, ...]) -> Any:
    """Value of the first path present and not N/A (amd-smi renamed keys across releases)."""
    for path in paths:
        value = _get(node, *path)
        if not _missing(value):
            return value
    return None


def _flatten(node: Any, prefix: str = "", depth: int = 0) -> dict[str, str]:
    """Dotted-path -> printable value for every leaf; {"value", "unit"} becomes 'v unit'."""
    out: dict[str, str] = {}
    if depth > _MAX_DEPTH:
        return out
    if isinstance(node, dict):
        if "value" in node and set(node) <= {"value", "unit"}:
            unit = node.get("unit")
            out[prefix] = f"{node['value']} {unit}".strip() if unit else str(node["value"])
            return out
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key), depth + 1))
    elif isinstance(node, list):
        parts = []
        for item in node:
            flat = _flatten(item, "", depth + 1)
            parts.append(flat.get("", json.dumps(flat)) if flat else "")
        out[prefix] = "[" + ", ".join(parts) + "]"
    else:
        out[prefix] = "" if node is None else str(node)
    return out


# --------------------------------------------------------------------------- input shapes


def _looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def _load_json(text: str, warnings: list[str]) -> Any:
    """Decoded JSON, tolerating log lines before it; None (with a warning) when invalid."""
    stripped = text.strip()
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    if not starts:
        warnings.append("no JSON found")
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(stripped, min(starts))
    except (ValueError, RecursionError) as error:
        warnings.append(f"invalid JSON: {str(error)[:80]}")
        return None
    return data


def _lower_keys(node: Any, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, dict):
        return {str(k).strip().lower(): _lower_keys(v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_lower_keys(item, depth + 1) for item in node]
    return node


def _gpu_items(data: Any) -> list[dict[str, Any]]:
    """Per-GPU objects from a list, {"gpu_data": [...]}, or a single {"gpu": n, ...}."""
    if isinstance(data, dict):
        if isinstance(data.get("gpu_data"), list):
            data = data["gpu_data"]
        elif "gpu" in data and not isinstance(data.get("gpu"), (list, dict)):
            data = [data]
        else:
            lists = [v for v in data.values() if isinstance(v, list)]
            data = [item for items in lists for item in items]
    if not isinstance(data, list):
        return []
    return [item for item in data if isinstance(item, dict) and "gpu" in item]


def _index_of(item: dict[str, Any], warnings: list[str]) -> int | None:
    index = _int(item.get("gpu"))
    if index is None or index < 0 or index >= MAX_GPUS:
        warnings.append(f"GPU id {str(item.get('gpu'))[:20]!r} not understood")
        return None
    return index


def _json_gpus(text: str, warnings: list[str]) -> dict[int, dict[str, Any]]:
    data = _lower_keys(_load_json(text, warnings))
    gpus: dict[int, dict[str, Any]] = {}
    for item in _gpu_items(data):
        index = _index_of(item, warnings)
        if index is not None:
            gpus[index] = item
    return gpus


def _text_gpus(text: str, warnings: list[str]) -> dict[int, dict[str, Any]]:
    """The indented 'GPU: n' blocks as nested dicts with lower-case, snake-cased keys.

    A line that is not 'KEY: value' continues the previous value: amd-smi wraps long lists
    such as JPEG_ACTIVITY over several lines.
    """
    gpus: dict[int, dict[str, Any]] = {}
    top_indent: int | None = None
    stack: list[tuple[int, dict[str, Any]]] = []
    last_leaf: tuple[dict[str, Any], str] | None = None
    outside = 0  # lines outside any 'GPU: n' block (CPU blocks, damaged headers)
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        line = raw.replace("\t", "    ")
        indent = len(line) - len(line.lstrip(" "))
        match = _KV.match(line)
        key = "_".join(match.group("key").lower().split()) if match else ""
        value = (match.group("value") or "").strip() if match else ""
        if match and (top_indent is None or indent <= top_indent):
            if key == "gpu":
                index = to_int(value)
                if index is None or index < 0 or index >= MAX_GPUS:
                    warnings.append(f"line {lineno}: GPU id {value[:20]!r} not understood")
                    stack, last_leaf = [], None
                    continue
                top_indent = indent
                gpus[index] = {}
                stack, last_leaf = [(indent, gpus[index])], None
                continue
            if top_indent is not None:  # 'CPU: 0' and other top-level blocks end the GPU
                stack, last_leaf = [], None
                continue
        if not stack:
            outside += 1
            continue
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if match and indent > stack[-1][0]:
            if value:
                parent[key] = value
                last_leaf = (parent, key)
            else:
                child: dict[str, Any] = {}
                parent[key] = child
                stack.append((indent, child))
                last_leaf = None
        elif last_leaf is not None and indent > stack[0][0]:
            node, leaf = last_leaf
            node[leaf] = f"{node[leaf]} {raw.strip()}"
        else:
            warnings.append(f"line {lineno}: not understood: {raw.strip()[:60]!r}")
    if outside:
        warnings.append(f"{outside} line(s) outside any 'GPU: n' block ignored")
    return gpus


def _load_gpus(text: str, warnings: list[str]) -> dict[int, dict[str, Any]]:
    gpus = _json_gpus(text, warnings) if _looks_like_json(text) else _text_gpus(text, warnings)
    if not gpus:
        warnings.append("no GPU entries found")
    return gpus


# --------------------------------------------------------------------------- static


def parse_static(text: str) -> Parsed[list[GpuInfo]]:
    """``amd-smi static`` (any subset: --asic, --bus, --vbios, --driver, --board...).

    Text or ``--json``. ``name`` is the ASIC market name (board product name as fallback);
    ``memory_bytes`` the VRAM size; every leaf is also in ``extra`` by dotted path
    ('asic.device_id', 'asic.target_graphics_version', 'asic.num_compute_units'...).
    """
    warnings: list[str] = []
    gpus = _load_gpus(text, warnings)
    infos = []
    for index in sorted(gpus):
        node = gpus[index]
        info = GpuInfo(index=index)
        info.name = _text(_first(node, ("asic", "market_name"), ("board", "product_name")))
        info.pci_bus_id = _text(_first(node, ("bus", "bdf"), ("bdf",)))
        info.serial = _text(_first(node, ("asic", "asic_serial"), ("board", "product_serial")))
        info.uuid = _text(node.get("uuid"))
        info.driver_version = _text(_first(node, ("driver", "version"), ("driver_version",)))
        info.vbios = _text(
            _first(
                node,
                ("vbios", "version"),
                ("ifwi", "version"),
                ("vbios", "part_number"),
                ("ifwi", "part_number"),
            )
        )
        info.memory_bytes = _bytes(_get(node, "vram", "size"), "MB")
        info.numa_node = _int(_get(node, "numa", "node"))
        info.extra = {k: v for k, v in _flatten(node).items() if k and k != "gpu"}
        infos.append(info)
    return Parsed(infos, warnings)


# --------------------------------------------------------------------------- metric


def _metrics_of(index: int, node: dict[str, Any]) -> GpuMetrics:
    m = GpuMetrics(index=index)
    usage = node.get("usage")
    m.gfx_activity_percent = _float(_get(usage, "gfx_activity"))
    m.umc_activity_percent = _float(_get(usage, "umc_activity"))
    m.mm_activity_percent = _float(_get(usage, "mm_activity"))
    m.vcn_activity_percent = _list(_get(usage, "vcn_activity"))
    m.jpeg_activity_percent = _list(_get(usage, "jpeg_activity"))
    m.power_w = _float(
        _first(
            node,
            ("power", "socket_power"),
            ("power", "current_socket_power"),
            ("power", "average_socket_power"),
        )
    )
    m.temperature_edge_c = _float(_get(node, "temperature", "edge"))
    m.temperature_hotspot_c = _float(
        _first(node, ("temperature", "hotspot"), ("temperature", "junction"))
    )
    m.temperature_mem_c = _float(_first(node, ("temperature", "mem"), ("temperature", "vram")))
    m.vram_total_bytes = _bytes(_get(node, "mem_usage", "total_vram"), "MB")
    m.vram_used_bytes = _bytes(_get(node, "mem_usage", "used_vram"), "MB")
    pcie = node.get("pcie")
    m.pcie_width = _int(_get(pcie, "width"))
    m.pcie_speed_gts = _float(_get(pcie, "speed"))
    m.pcie_bandwidth_mbps = _float(_get(pcie, "bandwidth"))
    m.pcie_replay_count = _int(_get(pcie, "replay_count"))
    m.pcie_replay_rollover_count = _int(_get(pcie, "replay_roll_over_count"))
    m.pcie_l0_to_recovery_count = _int(_get(pcie, "l0_to_recovery_count"))
    m.pcie_nak_sent_count = _int(_get(pcie, "nak_sent_count"))
    m.pcie_nak_received_count = _int(_get(pcie, "nak_received_count"))
    m.ecc_correctable_count = _int(_get(node, "ecc", "total_correctable_count"))
    m.ecc_uncorrectable_count = _int(_get(node, "ecc", "total_uncorrectable_count"))
    m.energy_j = _float(_get(node, "energy", "total_energy_consumption"))
    m.extra = {k: v for k, v in _flatten(node).items() if k and k != "gpu"}
    return m


def parse_metric(text: str) -> Parsed[list[GpuMetrics]]:
    """``amd-smi metric`` (or any of -u/-p/-t/-m/-P/-e/-E), text or ``--json``."""
    warnings: list[str] = []
    gpus = _load_gpus(text, warnings)
    return Parsed([_metrics_of(index, gpus[index]) for index in sorted(gpus)], warnings)


# --------------------------------------------------------------------------- tables


def _table_title(line: str) -> str | None:
    """'numa_bw' for 'NUMA BW TABLE:', None for other lines."""
    stripped = line.strip().rstrip(":").rstrip()
    if not stripped.upper().endswith(" TABLE"):
        return None
    name = stripped[:-6].strip()
    if not _TABLE_NAME.fullmatch(name):
        return None
    return "_".join(name.lower().split())


def _tables(text: str) -> list[tuple[str, list[tuple[int, str]]]]:
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
        gpu = _GPU_LABEL.match(label)
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
    return bool(_BDF.match(token) or _GPU_LABEL.match(token))


def _link_type(cell: str) -> str | None:
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
            kind = _link_type(str(raw)) if raw is not None else None
            if kind is None:
                if raw is not None:
                    warnings.append(f"GPU{i}-GPU{j}: unknown link type {str(raw)[:20]!r}")
                kind = "unknown"
            row.append(kind)
        topo.link_type.append(row)
        topo.weight.append([_int(cells.get("weight", {}).get((i, j))) for j in range(n)])
        topo.hops.append([_int(cells.get("hops", {}).get((i, j))) for j in range(n)])
    for name, found in cells.items():
        if name in ("link_type", "weight", "hops"):
            continue
        topo.extra[name] = [
            [_flatten(found[(i, j)]).get("", "") if (i, j) in found else "" for j in range(n)]
            for i in range(n)
        ]
    return topo


def _size(indices: list[int]) -> int:
    return min(max(indices) + 1, MAX_GPUS) if indices else 0


def _text_topology(text: str, warnings: list[str]) -> Topology:
    labels = _Labels()
    cells: dict[str, dict[tuple[int, int], Any]] = {}
    for name, lines in _tables(text):
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
    if labels.names and all(_BDF.match(name) for name in labels.names):
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
    data = _lower_keys(_load_json(text, warnings))
    labels = _Labels()
    cells: dict[str, dict[tuple[int, int], Any]] = {}
    bdfs: dict[int, str] = {}
    for item in _gpu_items(data):
        i = _index_of(item, warnings)
        if i is None:
            continue
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
            j = _int(link.get("gpu"))
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
    if _looks_like_json(text):
        topo = _json_topology(text, warnings)
    else:
        topo = _text_topology(text, warnings)
    return Parsed(topo, warnings)


# --------------------------------------------------------------------------- xgmi


def _cell_bytes(cell: str) -> int | None:
    return None if cell.strip().upper() == "N/A" else _bytes(cell, "KB")


def _text_xgmi(text: str, warnings: list[str]) -> dict[int, XgmiGpu]:
    gpus: dict[int, XgmiGpu] = {}
    for name, lines in _tables(text):
        peers: list[str] = []
        current: XgmiGpu | None = None
        for lineno, line in lines:
            tokens = line.split()
            first = tokens[0]
            gpu = _GPU_LABEL.match(first)
            if gpu is None and first.lower() in ("bdf", "gpu"):
                peers = [t for t in tokens if _BDF.match(t) or _GPU_LABEL.match(t)]
                continue
            if gpu is not None:
                index = to_int(gpu.group(1))
                if index is None or index >= MAX_GPUS:
                    warnings.append(f"line {lineno}: GPU label {first[:20]!r} out of range")
                    current = None
                    continue
                current = gpus.setdefault(index, XgmiGpu(index=index))
                rest = tokens[1:]
                if rest and _BDF.match(rest[0]):
                    current.bdf = rest.pop(0)
                if "status" in name:
                    current.link_status = [_STATUS_WORDS.get(t.lower(), t) for t in rest]
                    continue
                rates = [_rate(*found) for found in _RATE.findall(" ".join(rest))]
                if rates:
                    current.bit_rate_gbps = rates[0]
                if len(rates) > 1:
                    current.max_bandwidth_gbps = rates[1]
                if rest and re.fullmatch(r"[A-Za-z]+", rest[-1]):
                    current.link_type = _link_type(rest[-1]) or rest[-1].lower()
                current.peer_bdfs = list(peers)
                continue
            direction = first.lower()
            if direction in ("read", "write") and current is not None:
                values = [
                    _cell_bytes(cell)
                    for cell in _CELL.findall(line[line.lower().find(direction) + len(direction) :])
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
    if depth > _MAX_DEPTH:
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
    data = _lower_keys(_load_json(text, warnings))
    gpus: dict[int, XgmiGpu] = {}
    for item in _gpu_items(data):
        index = _index_of(item, warnings)
        if index is None:
            continue
        gpu = gpus.setdefault(index, XgmiGpu(index=index))
        gpu.bdf = _text(item.get("bdf")) or gpu.bdf
        rate = _find(item, "bit_rate")
        if rate is not None:
            gpu.bit_rate_gbps = _rate_gbps(rate)
        bandwidth = _find(item, "max_bandwidth")
        if bandwidth is not None:
            gpu.max_bandwidth_gbps = _rate_gbps(bandwidth)
        kind = _text(_find(item, "link_type"))
        if kind is not None:
            gpu.link_type = _link_type(kind) or kind.lower()
        entries = _peer_entries(item)
        if entries:
            gpu.peer_bdfs = [peer for peer, _ in entries]
            gpu.read_bytes = [_bytes(link.get("read"), "KB") for _, link in entries]
            gpu.write_bytes = [_bytes(link.get("write"), "KB") for _, link in entries]
        status = _find(item, "link_status")
        if isinstance(status, list):
            gpu.link_status = [_STATUS_WORDS.get(str(s).lower(), str(s)) for s in status]
        elif isinstance(status, str):
            gpu.link_status = [_STATUS_WORDS.get(s.lower(), s) for s in status.split()]
    return gpus


def parse_xgmi(text: str) -> Parsed[list[XgmiGpu]]:
    """``amd-smi xgmi`` (metric table, link status table) text or ``--json``.

    Read/write volumes are bytes (amd-smi's KB/MB/GB are binary); rates are Gb/s.
    """
    warnings: list[str] = []
    if _looks_like_json(text):
        gpus = _json_xgmi(text, warnings)
    else:
        gpus = _text_xgmi(text, warnings)
    if not gpus:
        warnings.append("no GPU rows found in xgmi output")
    return Parsed([gpus[index] for index in sorted(gpus)], warnings)
