"""Parsers for rocm-smi output: product names, topology, VRAM, the concise table and --json.

rocm-smi prints two kinds of block: per-GPU ``GPU[i] : key: value`` lines, and GPU x GPU
matrices under ``==== title ====`` banners. Its column sets and key capitalisation drifted
across ROCm releases, so keys are matched case-insensitively, tables are mapped by their
header, and anything not understood becomes a warning instead of an exception.
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

_GPU_LINE = re.compile(r"^\s*GPU\[(\d+)\]\s*:\s*(.*)$")
_GPU_LABEL = re.compile(r"^GPU(\d+)$", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_KEY_SEPARATOR = re.compile(r":(?:\s|$)")
_CARD_KEY = re.compile(r"^card(\d+)$", re.IGNORECASE)
_JSON_PAIR_KEY = re.compile(
    r"^\(topology\)\s*(weight|hops|link type)\s+between\s+drm\s+devices\s+(\d+)\s+and\s+(\d+)$"
)
_SENSOR = re.compile(r"\((junction|edge|dieedge|memory|mem|hotspot)\)", re.IGNORECASE)
_PERF_LEVELS = {
    "auto",
    "low",
    "high",
    "manual",
    "determinism",
    "stable_std",
    "stable_peak",
    "stable_min_mclk",
    "stable_min_sclk",
    "profile_standard",
    "profile_peak",
    "unknown",
}


@dataclass
class GpuStatus:
    """One GPU's live readings (concise table, --showuse, or the same keys in --json).

    Units are in the field names; fields the output does not show stay None.
    ``temperature_sensor`` says which sensor ``temperature_c`` came from (rocm-smi switched
    the concise table from the edge to the junction sensor in ROCm 6).
    """

    index: int
    node_id: int | None = None
    device_id: str | None = None
    guid: str | None = None
    name: str | None = None
    temperature_c: float | None = None
    temperature_sensor: str | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    partitions: str | None = None
    sclk_mhz: float | None = None
    mclk_mhz: float | None = None
    fan_percent: float | None = None
    perf_level: str | None = None
    vram_percent: float | None = None
    gpu_percent: float | None = None
    extra: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers


def _norm(key: str) -> str:
    """Lower-case, single-spaced key: rocm-smi spells 'Card series' and 'Card Series'."""
    return " ".join(key.strip().lower().split())


def _snake(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def _number(text: str | None) -> float | None:
    """First number in a cell such as '43.0°C', '155.0W', '94Mhz', '(300Mhz)', '0%'."""
    if text is None:
        return None
    match = _NUMBER.search(text)
    if not match:
        return None
    try:
        value = float(match.group())
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def _present(value: str | None) -> str | None:
    """None for the ways rocm-smi says 'nothing here'."""
    if value is None:
        return None
    value = value.strip()
    if not value or value.upper() in ("N/A", "NA", "NONE", "UNKNOWN"):
        return None
    return value


def _split_key_value(rest: str) -> tuple[str, str] | None:
    """Split 'key: value' at the first colon followed by a blank or the line end.

    Values such as PCI addresses (0000:83:00.0) contain colons too, but never one followed
    by a blank, so the first ': ' is the separator.
    """
    match = _KEY_SEPARATOR.search(rest)
    if not match:
        return None
    key = rest[: match.start()].strip()
    if not key:
        return None
    return key, rest[match.end() :].strip()


def _gpu_fields(lines: list[tuple[int, str]], warnings: list[str]) -> dict[int, dict[str, str]]:
    """Collect ``GPU[i] : key: value`` lines into {index: {normalised key: value}}."""
    fields: dict[int, dict[str, str]] = {}
    for lineno, line in lines:
        match = _GPU_LINE.match(line)
        if not match:
            continue
        index = to_int(match.group(1))
        if index is None or index >= MAX_GPUS:
            warnings.append(f"line {lineno}: GPU index {match.group(1)[:20]} out of range")
            continue
        pair = _split_key_value(match.group(2))
        if pair is None:
            warnings.append(f"line {lineno}: no 'key: value' after GPU[{index}]")
            continue
        fields.setdefault(index, {})[_norm(pair[0])] = pair[1]
    return fields


def _banner_title(line: str) -> str | None:
    """Title of a '==== title ====' banner, None for other lines.

    String operations rather than a regex: '=+\\s*(.*?)\\s*=+' backtracks cubically on a
    long run of '='.
    """
    stripped = line.strip()
    if len(stripped) < 2 or stripped[0] != "=" or stripped[-1] != "=":
        return None
    return stripped.strip("=").strip()


def _numbered(text: str) -> list[tuple[int, str]]:
    return list(enumerate(text.splitlines(), 1))


# rocm-smi key (normalised) -> GpuInfo attribute. Anything else lands in ``extra``.
_INFO_KEYS = {
    "card series": "name",
    "vram total memory (b)": "memory_bytes",
    "vram total used memory (b)": "memory_used_bytes",
    "pci bus": "pci_bus_id",
    "serial number": "serial",
    "unique id": "uuid",
    "driver version": "driver_version",
    "vbios version": "vbios",
    "(topology) numa node": "numa_node",
}
_INT_ATTRS = {"memory_bytes", "memory_used_bytes", "numa_node"}


def _to_gpu_info(index: int, fields: dict[str, str], warnings: list[str]) -> GpuInfo:
    """Map one GPU's rocm-smi keys onto GpuInfo; unknown keys go to ``extra`` by snake name."""
    info = GpuInfo(index=index)
    for key, value in fields.items():
        attr = _INFO_KEYS.get(key)
        if attr is None:
            info.extra[_snake(key) or key] = value
            continue
        if attr in _INT_ATTRS:
            number = to_int(value)
            if number is None and _present(value) is not None:
                warnings.append(f"GPU[{index}]: {key!r} is not an integer: {value[:40]!r}")
            setattr(info, attr, number)
        else:
            setattr(info, attr, _present(value))
    if info.name is None:
        # Some releases print 'Device Name' instead of 'Card series'.
        info.name = _present(fields.get("device name"))
    return info


def _gpu_infos(text: str, what: str) -> Parsed[list[GpuInfo]]:
    warnings: list[str] = []
    fields = _gpu_fields(_numbered(text), warnings)
    if not fields:
        warnings.append(f"no 'GPU[i] : key: value' lines found for {what}")
    gpus = [_to_gpu_info(index, fields[index], warnings) for index in sorted(fields)]
    return Parsed(gpus, warnings)


# --------------------------------------------------------------------------- per-GPU blocks


def parse_productname(text: str) -> Parsed[list[GpuInfo]]:
    """``rocm-smi --showproductname`` (or the Product Info part of ``-a``).

    ``name`` is the card series (e.g. 'AMD Instinct MI300X OAM'); model, vendor, SKU and
    newer keys (GFX Version, Node ID, GUID...) are kept in ``extra`` as card_model,
    card_vendor, card_sku, gfx_version...
    """
    return _gpu_infos(text, "--showproductname")


def parse_showmeminfo(text: str) -> Parsed[list[GpuInfo]]:
    """``rocm-smi --showmeminfo vram`` (or ``all``): VRAM total/used bytes per GPU.

    Other memory kinds (VIS_VRAM, GTT) go to ``extra`` under their snake-cased key.
    """
    return _gpu_infos(text, "--showmeminfo")


def parse_showuse(text: str) -> Parsed[list[GpuStatus]]:
    """``rocm-smi -u`` / ``--showuse``: the 'GPU use (%)' busy percentage per GPU.

    'GFX Activity' is a cumulative counter, not a percentage; it is kept in ``extra``.
    """
    warnings: list[str] = []
    fields = _gpu_fields(_numbered(text), warnings)
    statuses = []
    for index in sorted(fields):
        status = GpuStatus(index=index)
        for key, value in fields[index].items():
            if key == "gpu use (%)":
                status.gpu_percent = _number(value)
            elif key == "gpu memory allocated (vram%)":
                status.vram_percent = _number(value)
            else:
                status.extra[_snake(key) or key] = value
        statuses.append(status)
    if not any(s.gpu_percent is not None for s in statuses):
        warnings.append("no 'GPU use (%)' lines found")
    return Parsed(statuses, warnings)


# --------------------------------------------------------------------------- topology


def _sections(text: str) -> dict[str, list[tuple[int, str]]]:
    """Lines of the showtopo blocks, keyed weight / hops / link_type / numa."""
    sections: dict[str, list[tuple[int, str]]] = {}
    current: str | None = None
    for lineno, line in _numbered(text):
        title = _banner_title(line)
        if title is not None:
            title = title.lower()
            if "weight" in title:
                current = "weight"
            elif "hops" in title:
                current = "hops"
            elif "link type" in title:
                current = "link_type"
            elif "numa" in title:
                current = "numa"
            else:
                current = None
            continue
        if current is not None:
            sections.setdefault(current, []).append((lineno, line))
    return sections


def _matrix(
    lines: list[tuple[int, str]], name: str, warnings: list[str]
) -> dict[tuple[int, int], str]:
    """Cells of one 'GPU0 GPU1 ...' matrix as {(row, column): text}."""
    columns: list[int | None] | None = None
    cells: dict[tuple[int, int], str] = {}
    for lineno, line in lines:
        tokens = line.split()
        if not tokens:
            continue
        if all(_GPU_LABEL.match(token) for token in tokens):
            columns = [_label_index(token) for token in tokens]
            continue
        if _GPU_LABEL.match(tokens[0]) is None:
            warnings.append(f"line {lineno}: {name} row without a GPUn label: {line[:60]!r}")
            continue
        row = _label_index(tokens[0])
        if row is None:
            warnings.append(f"line {lineno}: {name} row label {tokens[0][:20]!r} out of range")
            continue
        values = tokens[1:]
        header: list[int | None] = columns if columns is not None else list(range(len(values)))
        if len(values) != len(header):
            warnings.append(
                f"line {lineno}: {name} row GPU{row} has {len(values)} cells "
                f"for {len(header)} columns"
            )
        for column, value in zip(header, values, strict=False):  # short rows were warned about
            if column is not None:
                cells[(row, column)] = value
    return cells


def _label_index(token: str) -> int | None:
    """3 for 'GPU3'; None for other tokens and for indices beyond MAX_GPUS."""
    match = _GPU_LABEL.match(token)
    if match is None:
        return None
    index = to_int(match.group(1))  # to_int, not int(): 5000 digits would raise
    return index if index is not None and index < MAX_GPUS else None


def _link_type(cell: str) -> str | None:
    low = cell.strip().lower()
    if low == "xgmi":
        return "xgmi"
    if low.startswith("pci"):
        return "pcie"
    if low in LINK_TYPES:
        return low
    return None


def _build_topology(
    n: int,
    link: dict[tuple[int, int], str],
    weight: dict[tuple[int, int], str],
    hops: dict[tuple[int, int], str],
    warnings: list[str],
) -> Topology:
    """Square matrices from sparse cells; the diagonal is 'self', missing cells None/unknown."""
    topo = Topology(gpus=n)
    for i in range(n):
        link_row: list[str] = []
        weight_row: list[int | None] = []
        hops_row: list[int | None] = []
        for j in range(n):
            if i == j:
                link_row.append("self")
            elif (i, j) in link:
                kind = _link_type(link[(i, j)])
                if kind is None:
                    warnings.append(f"GPU{i}-GPU{j}: unknown link type {link[(i, j)][:20]!r}")
                    kind = "unknown"
                link_row.append(kind)
            else:
                link_row.append("unknown")
            weight_row.append(to_int(weight[(i, j)]) if (i, j) in weight else None)
            hops_row.append(to_int(hops[(i, j)]) if (i, j) in hops else None)
        topo.link_type.append(link_row)
        topo.weight.append(weight_row)
        topo.hops.append(hops_row)
    topo.numa_node = [None] * n
    return topo


def _size(indices: list[int], warnings: list[str]) -> int:
    if not indices:
        return 0
    largest = max(indices)
    if largest >= MAX_GPUS:
        warnings.append(f"GPU index {largest} out of range; matrices cut at {MAX_GPUS}")
        return MAX_GPUS
    return largest + 1


def parse_showtopo(text: str) -> Parsed[Topology]:
    """``rocm-smi --showtopo``: weight, hops and link-type matrices plus NUMA node per GPU.

    Link types become 'xgmi' / 'pcie' ('self' on the diagonal). Hops are kept as printed:
    rocm-smi reports 1 for every xGMI pair even when the two GPUs are not directly linked,
    so link type and weight are the truth. 'Numa Affinity' is kept in
    ``extra['numa_affinity']`` as one single-cell row per GPU.
    """
    warnings: list[str] = []
    sections = _sections(text)
    cells = {
        name: _matrix(sections.get(name, []), name, warnings)
        for name in ("weight", "hops", "link_type")
    }
    for name, found in cells.items():
        if not found:
            warnings.append(f"no {name.replace('_', ' ')} matrix found")
    numa_fields = _gpu_fields(sections.get("numa", []), warnings)
    indices = [i for found in cells.values() for pair in found for i in pair]
    indices += [i for i in numa_fields]
    n = _size(indices, warnings)
    topo = _build_topology(n, cells["link_type"], cells["weight"], cells["hops"], warnings)
    affinity: list[list[str]] = []
    for i in range(n):
        fields = numa_fields.get(i, {})
        topo.numa_node[i] = to_int(fields.get("(topology) numa node", ""))
        affinity.append([fields.get("(topology) numa affinity", "")])
    if numa_fields:
        topo.extra["numa_affinity"] = affinity
    else:
        warnings.append("no NUMA node lines found")
    return Parsed(topo, warnings)


# --------------------------------------------------------------------------- concise table


def _cells(line: str) -> list[str]:
    """Split a table row on runs of 2+ blanks, re-joining 'a, b' groups split by the gap.

    '0x74a2,   1017' (DID, GUID) and 'NPS1, SPX, 0' (partitions) are one column each.
    """
    parts = [p for p in re.split(r"\s{2,}|\t+", line.strip()) if p]
    merged: list[str] = []
    for part in parts:
        if merged and merged[-1].endswith(","):
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    return merged


def _assign(status: GpuStatus, column: str, value: str) -> None:
    """Put one concise-table cell into the field its header names."""
    col = column.lower()
    if col in ("device", "gpu"):
        return
    if col == "node":
        status.node_id = to_int(value)
    elif col.startswith("ids"):
        parts = [p.strip() for p in value.split(",")]
        status.device_id = _present(parts[0])
        status.guid = _present(parts[1]) if len(parts) > 1 else None
    elif col.startswith("[model"):
        inner = [p.strip(" []") for p in value.split(":")]
        status.device_id = _present(inner[0])
        if len(inner) > 1:
            status.extra["revision"] = inner[1]
    elif col.startswith("temp"):
        status.temperature_c = _number(value)
    elif col.startswith("power") or col in ("avgpwr", "pwr"):
        status.power_w = _number(value)
    elif col.startswith("partition"):
        status.partitions = _present(value)
    elif col == "sclk":
        status.sclk_mhz = _number(value)
    elif col == "mclk":
        status.mclk_mhz = _number(value)
    elif col == "fan":
        status.fan_percent = _number(value)
    elif col == "perf":
        status.perf_level = _present(value)
    elif col == "pwrcap":
        status.power_cap_w = _number(value)
    elif col == "vram%":
        status.vram_percent = _number(value)
    elif col == "gpu%":
        status.gpu_percent = _number(value)
    else:
        status.extra[_snake(column) or column] = value


def _assign_by_unit(status: GpuStatus, tokens: list[str]) -> None:
    """Fallback when a row does not line up with its header: place values by their units."""
    temps = [t for t in tokens if re.fullmatch(r"[-+]?\d+(\.\d+)?(°C|°|c|C)", t)]
    watts = [t for t in tokens if re.fullmatch(r"\d+(\.\d+)?W", t)]
    clocks = [t for t in tokens if re.fullmatch(r"\d+(\.\d+)?[Mm]hz", t)]
    percents = [t for t in tokens if re.fullmatch(r"\d+(\.\d+)?%", t)]
    if temps:
        status.temperature_c = _number(temps[0])
    if watts:
        status.power_w = _number(watts[0])
        if len(watts) > 1:
            status.power_cap_w = _number(watts[-1])
    if clocks:
        status.sclk_mhz = _number(clocks[0])
        if len(clocks) > 1:
            status.mclk_mhz = _number(clocks[1])
    if len(percents) >= 2:
        status.vram_percent = _number(percents[-2])
        status.gpu_percent = _number(percents[-1])
        if len(percents) >= 3:
            status.fan_percent = _number(percents[0])
    for token in tokens:
        if token.lower() in _PERF_LEVELS:
            status.perf_level = token
            break


def parse_concise(text: str) -> Parsed[list[GpuStatus]]:
    """Plain ``rocm-smi``: the 'Concise Info' table (temp, power, clocks, VRAM%, GPU%...).

    Columns are mapped by header name, which covers the ROCm 5 layout (GPU, Temp (DieEdge),
    AvgPwr...), ROCm 6.0/6.1 ([Model : Revision] with the name on a second line) and
    ROCm 6.2+ (Device, Node, IDs (DID, GUID), Partitions...).
    """
    warnings: list[str] = []
    lines = _numbered(text)
    header: list[str] | None = None
    sensor: str | None = None
    in_body = False
    statuses: list[GpuStatus] = []
    for lineno, line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        low = stripped.lower()
        if header is None:
            if "temp" in low and ("gpu%" in low or "vram%" in low):
                header = _cells(line)
                found = _SENSOR.search(line)
                sensor = found.group(1).lower() if found else None
            continue
        if stripped.startswith("="):
            if "end of" in low:
                break
            in_body = True
            continue
        if not in_body:
            found = _SENSOR.search(line)  # second header line: '(DID, GUID)  (Junction) ...'
            if found and sensor is None:
                sensor = found.group(1).lower()
            if not re.match(r"^\d+\s", stripped):
                continue
            in_body = True  # a table printed without the separator line
        if not re.match(r"^\d+(\s|$)", stripped):
            indented = line[:1].isspace()
            if indented and statuses and statuses[-1].name is None and stripped[0] != "(":
                statuses[-1].name = stripped  # ROCm 6.0/6.1 print the name under the row
            else:
                warnings.append(f"line {lineno}: not a concise-table row: {stripped[:60]!r}")
            continue
        row = _cells(line)
        index = to_int(row[0].split()[0])
        if index is None or index >= MAX_GPUS:
            warnings.append(f"line {lineno}: bad device index {row[0][:20]!r}")
            continue
        status = GpuStatus(index=index, temperature_sensor=sensor)
        if len(row) == len(header):
            for column, value in zip(header, row, strict=True):
                _assign(status, column, value)
        else:
            warnings.append(
                f"line {lineno}: {len(row)} cells for {len(header)} columns; "
                "values placed by their units"
            )
            _assign_by_unit(status, line.split()[1:])
        statuses.append(status)
    if header is None:
        warnings.append("no concise table header (Temp ... VRAM% GPU%) found")
    elif not statuses:
        warnings.append("concise table has no GPU rows")
    return Parsed(statuses, warnings)


# --------------------------------------------------------------------------- --json


def _load_cards(text: str, warnings: list[str]) -> tuple[dict[int, dict[str, str]], dict[str, str]]:
    """({index: {normalised key: value}}, system section) from ``rocm-smi --json``.

    rocm-smi may print warnings before the JSON object, so decoding starts at the first '{'.
    """
    start = text.find("{")
    if start < 0:
        warnings.append("no JSON object found")
        return {}, {}
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError) as error:
        warnings.append(f"invalid JSON: {str(error)[:80]}")
        return {}, {}
    if not isinstance(data, dict):
        warnings.append("JSON top level is not an object")
        return {}, {}
    cards: dict[int, dict[str, str]] = {}
    system: dict[str, str] = {}
    for key, value in data.items():
        match = _CARD_KEY.match(str(key))
        if not isinstance(value, dict):
            warnings.append(f"JSON key {str(key)[:30]!r} does not hold an object")
            continue
        # All-digit keys ('0': '16.0GT/s x16 *') are clock-level lists that rocm-smi flattens
        # into one object, each clock overwriting the last; they mean nothing on their own.
        flat = {_norm(str(k)): _scalar(v) for k, v in value.items() if not str(k).isdigit()}
        if match:
            index = to_int(match.group(1))
            if index is None or index >= MAX_GPUS:
                warnings.append(f"JSON key {str(key)[:30]!r}: index out of range")
                continue
            cards[index] = flat
        elif str(key).lower() == "system":
            system = flat
        else:
            warnings.append(f"JSON key {str(key)[:30]!r} not understood")
    if not cards:
        warnings.append("no 'cardN' objects in JSON")
    return cards, system


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value)
    except (ValueError, TypeError, RecursionError):
        return str(value)


def parse_json(text: str) -> Parsed[list[GpuInfo]]:
    """``rocm-smi --json`` / ``--showallinfo --json``: one GpuInfo per 'cardN' object.

    The driver version comes from the 'system' object when the cards do not carry it.
    Keys not mapped to a GpuInfo field are kept in ``extra`` (snake-cased).
    """
    warnings: list[str] = []
    cards, system = _load_cards(text, warnings)
    gpus = []
    for index in sorted(cards):
        info = _to_gpu_info(index, cards[index], warnings)
        if info.driver_version is None:
            info.driver_version = _present(system.get("driver version"))
        gpus.append(info)
    return Parsed(gpus, warnings)


_JSON_TEMPERATURES = (
    ("temperature (sensor junction) (c)", "junction"),
    ("temperature (sensor edge) (c)", "edge"),
    ("temperature (sensor memory) (c)", "memory"),
)
_JSON_POWER = (
    "current socket graphics package power (w)",
    "average graphics package power (w)",
)


def parse_json_status(text: str) -> Parsed[list[GpuStatus]]:
    """Live readings from ``rocm-smi --json`` (the keys behind the concise table)."""
    warnings: list[str] = []
    cards, _ = _load_cards(text, warnings)
    statuses = []
    for index in sorted(cards):
        card = cards[index]
        status = GpuStatus(index=index)
        for key, sensor in _JSON_TEMPERATURES:
            if _number(_present(card.get(key))) is not None:
                status.temperature_c = _number(card[key])
                status.temperature_sensor = sensor
                break
        for key in _JSON_POWER:
            if _number(_present(card.get(key))) is not None:
                status.power_w = _number(card[key])
                break
        status.power_cap_w = _number(_present(card.get("max graphics package power (w)")))
        status.gpu_percent = _number(_present(card.get("gpu use (%)")))
        status.vram_percent = _number(_present(card.get("gpu memory allocated (vram%)")))
        status.fan_percent = _number(_present(card.get("fan speed (%)")))
        status.sclk_mhz = _number(_present(card.get("sclk clock speed:")))
        status.mclk_mhz = _number(_present(card.get("mclk clock speed:")))
        status.perf_level = _present(card.get("performance level"))
        status.device_id = _present(card.get("device id"))
        status.guid = _present(card.get("guid"))
        status.node_id = to_int(card.get("node id", ""))
        status.name = _present(card.get("card series"))
        statuses.append(status)
    return Parsed(statuses, warnings)


def parse_json_topology(text: str) -> Parsed[Topology]:
    """Topology from ``rocm-smi --showtopo --json`` (or ``--showallinfo --json``).

    Pairs come from the 'system' keys '(Topology) Weight|Hops|Link type between DRM devices
    i and j' (upper triangle only, mirrored here); NUMA nodes from each card.
    """
    warnings: list[str] = []
    cards, system = _load_cards(text, warnings)
    cells: dict[str, dict[tuple[int, int], str]] = {"weight": {}, "hops": {}, "link type": {}}
    for key, value in system.items():
        match = _JSON_PAIR_KEY.match(key)
        if not match:
            continue
        i, j = to_int(match.group(2)), to_int(match.group(3))
        if i is None or j is None or i >= MAX_GPUS or j >= MAX_GPUS:
            warnings.append(f"{key[:60]!r}: device index out of range")
            continue
        cells[match.group(1)][(i, j)] = value
        cells[match.group(1)][(j, i)] = value
    if not any(cells.values()):
        warnings.append("no '(Topology) ... between DRM devices' keys in JSON")
    indices = list(cards) + [i for found in cells.values() for pair in found for i in pair]
    n = _size(indices, warnings)
    topo = _build_topology(n, cells["link type"], cells["weight"], cells["hops"], warnings)
    for i in range(n):
        topo.numa_node[i] = to_int(cards.get(i, {}).get("(topology) numa node", ""))
        # The JSON leaves the diagonal out; the text form prints 0 there.
        if cells["weight"]:
            topo.weight[i][i] = 0
        if cells["hops"]:
            topo.hops[i][i] = 0
    return Parsed(topo, warnings)
