"""Parsers for ``nvidia-smi topo -m`` and ``nvidia-smi --query-gpu=... --format=csv``.

``topo -m`` says how GPUs reach each other (NVLink or which PCIe/SMP path) and which NIC sits
next to which GPU, the two facts behind most intra- and inter-node bandwidth problems. The CSV
query gives inventory (names, memory, driver); it is header-driven so any field selection and
both ``csv`` and ``csv,nounits`` work. "Not available" values become None, never 0.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from collscope.parsers.common import GpuInfo, Parsed, Topology, to_float, to_int

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# ---------------------------------------------------------------------------------------------
# nvidia-smi topo -m
# ---------------------------------------------------------------------------------------------

# Connection codes of the matrix legend -> collscope LINK_TYPES. SOC is the pre-2017 name of SYS.
_LINK_CODES = {
    "X": "self",
    "PIX": "pix",
    "PXB": "pxb",
    "PHB": "phb",
    "NODE": "node",
    "SYS": "sys",
    "SOC": "sys",
}

_AFFINITY_HEADERS = (
    (re.compile(r"CPU\s+Affinity", re.I), "CPU_Affinity"),
    (re.compile(r"NUMA\s+Affinity", re.I), "NUMA_Affinity"),
    (re.compile(r"GPU\s+NUMA\s+ID", re.I), "GPU_NUMA_ID"),
)
_TRAILING_COLUMNS = ("CPU_Affinity", "NUMA_Affinity", "GPU_NUMA_ID")
_GPU_LABEL = re.compile(r"^GPU(\d+)$")


@dataclass
class NvidiaTopo:
    """``nvidia-smi topo -m`` as typed data.

    ``topology`` holds the GPU x GPU part (link types from LINK_TYPES, NVLink counts as
    ``weight``, the raw codes in ``extra["raw"]``, NUMA affinity as ``numa_node``). NIC columns
    are kept in order with their legend names; ``gpu_nic[g][n]`` is the link type between GPU
    ``g`` and NIC ``n``.
    """

    topology: Topology = field(default_factory=Topology)
    nics: list[str] = field(default_factory=list)  # column labels: "NIC0" or (older) "mlx5_0"
    nic_names: dict[str, str] = field(default_factory=dict)  # "NIC0" -> "mlx5_0" (legend)
    gpu_nic: list[list[str]] = field(default_factory=list)
    nic_nic: list[list[str]] = field(default_factory=list)
    cpu_affinity: list[str | None] = field(default_factory=list)  # per GPU, "0-63,128-191"
    gpu_numa_id: list[int | None] = field(default_factory=list)  # per GPU, where printed

    def nic_name(self, column: int) -> str:
        """Device name of NIC column ``column`` ("mlx5_0"), the label when no legend names it."""
        label = self.nics[column]
        return self.nic_names.get(label, label)

    def nics_near(self, gpu: int) -> list[str]:
        """Names of the NICs with the closest PCIe link to ``gpu`` (best link type first)."""
        if gpu < 0 or gpu >= len(self.gpu_nic):
            return []
        order = {name: rank for rank, name in enumerate(
            ("self", "xgmi", "nvlink", "pcie", "pix", "pxb", "phb", "node", "sys"))}
        row = self.gpu_nic[gpu]
        ranks = [order.get(link, 99) for link in row]
        if not ranks or min(ranks) == 99:
            return []
        best = min(ranks)
        return [self.nic_name(i) for i, r in enumerate(ranks) if r == best and i < len(self.nics)]


def _link_of(cell: str) -> tuple[str, int | None]:
    """(link type, NVLink count) of one matrix cell; "unknown" for anything unrecognised."""
    code = cell.strip().upper()
    if code in _LINK_CODES:
        return _LINK_CODES[code], None
    match = re.match(r"^NV(\d+)$", code)
    if match:
        return "nvlink", int(match.group(1))
    return "unknown", None


def _header_tokens(line: str) -> list[str]:
    for pattern, name in _AFFINITY_HEADERS:
        line = pattern.sub(name, line)
    return line.split()


def _is_header(tokens: list[str], line: str) -> bool:
    """The column header is indented and starts with a GPU label; when a capture lost the
    indentation, it is still the only GPU line whose second token is not a link code."""
    if not tokens or not _GPU_LABEL.match(tokens[0]):
        return False
    if line[:1].isspace():
        return True
    return len(tokens) > 1 and _link_of(tokens[1])[0] == "unknown"


def parse_topo_matrix(text: str) -> Parsed[NvidiaTopo]:
    """Parse ``nvidia-smi topo -m`` (tab- or space-aligned, with or without ANSI underline)."""
    result = NvidiaTopo()
    warnings: list[str] = []
    if not isinstance(text, str):
        return Parsed(result, ["input is not text"])
    devices: list[str] = []
    trailing: list[str] = []
    rows: dict[str, list[str]] = {}
    row_extra: dict[str, dict[str, str]] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _ANSI.sub("", raw).rstrip()
        if not line.strip():
            continue
        legend = re.match(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$", line)
        if legend:
            result.nic_names[legend.group(1)] = legend.group(2)
            continue
        tokens = _header_tokens(line)
        if not devices:
            if _is_header(tokens, line):
                for token in tokens:
                    if token in _TRAILING_COLUMNS:
                        trailing.append(token)
                    elif not trailing:
                        devices.append(token)
                    else:
                        trailing.append(token)
            continue
        if "=" in line or line.strip().endswith(":"):
            continue  # legend lines ("X    = Self", "Legend:")
        label, cells = tokens[0], tokens[1:]
        if label in devices and label not in rows:
            if len(cells) < len(devices):
                warnings.append(f"line {lineno}: row {label} has {len(cells)} of "
                                f"{len(devices)} cells")
            rows[label] = cells[:len(devices)]
            row_extra[label] = dict(zip(trailing, cells[len(devices):]))
        elif label in rows:
            warnings.append(f"line {lineno}: duplicate row {label}")
        else:
            warnings.append(f"line {lineno}: unrecognised line {line.strip()[:60]!r}")
    if not devices:
        warnings.append("no topology header (GPU0 ...) found")
        return Parsed(result, warnings)
    _fill_matrices(result, devices, rows, row_extra, warnings)
    return Parsed(result, warnings)


def _fill_matrices(result: NvidiaTopo, devices: list[str], rows: dict[str, list[str]],
                   row_extra: dict[str, dict[str, str]], warnings: list[str]) -> None:
    gpu_columns: dict[int, int] = {}
    nic_columns: list[int] = []
    for column, label in enumerate(devices):
        match = _GPU_LABEL.match(label)
        if match:
            gpu_columns[int(match.group(1))] = column
        else:
            nic_columns.append(column)
    gpus = (max(gpu_columns) + 1) if gpu_columns else 0
    if gpus > 4096:
        warnings.append(f"implausible GPU index {gpus - 1}; matrix ignored")
        return
    topo = result.topology
    topo.gpus = gpus
    topo.link_type = [["unknown"] * gpus for _ in range(gpus)]
    topo.weight = [[None] * gpus for _ in range(gpus)]
    raw = [[""] * gpus for _ in range(gpus)]
    topo.numa_node = [None] * gpus
    result.nics = [devices[c] for c in nic_columns]
    result.gpu_nic = [["unknown"] * len(nic_columns) for _ in range(gpus)]
    result.nic_nic = [["unknown"] * len(nic_columns) for _ in nic_columns]
    result.cpu_affinity = [None] * gpus
    result.gpu_numa_id = [None] * gpus
    unknown_codes: set[str] = set()

    def cell(label: str, column: int) -> str | None:
        row = rows.get(label)
        return row[column] if row is not None and column < len(row) else None

    for g, g_label in ((g, devices[c]) for g, c in gpu_columns.items()):
        if g_label not in rows:
            warnings.append(f"no row for {g_label}")
            continue
        for h, h_column in gpu_columns.items():
            value = cell(g_label, h_column)
            if value is None:
                continue
            link, count = _link_of(value)
            if link == "unknown":
                unknown_codes.add(value)
            topo.link_type[g][h] = link
            topo.weight[g][h] = count
            raw[g][h] = value
        for n, n_column in enumerate(nic_columns):
            value = cell(g_label, n_column)
            if value is not None:
                link, _ = _link_of(value)
                if link == "unknown":
                    unknown_codes.add(value)
                result.gpu_nic[g][n] = link
        extra = row_extra.get(g_label, {})
        cpu = extra.get("CPU_Affinity")
        result.cpu_affinity[g] = None if cpu in (None, "N/A") else cpu
        topo.numa_node[g] = to_int(extra.get("NUMA_Affinity", ""))
        result.gpu_numa_id[g] = to_int(extra.get("GPU_NUMA_ID", ""))
    for i, i_column in enumerate(nic_columns):
        i_label = devices[i_column]
        for j, j_column in enumerate(nic_columns):
            value = cell(i_label, j_column)
            if value is not None:
                result.nic_nic[i][j] = _link_of(value)[0]
    topo.extra["raw"] = raw
    if unknown_codes:
        warnings.append(f"unknown link codes: {', '.join(sorted(unknown_codes))}")


# ---------------------------------------------------------------------------------------------
# nvidia-smi --query-gpu=... --format=csv
# ---------------------------------------------------------------------------------------------

# nvidia-smi's placeholders for "no value"; bracketed in csv, bare in csv,nounits.
_ABSENT = re.compile(r"^\[?\s*(n/?a|not supported|unknown error|insufficient permissions|"
                     r"gpu requires reset|gpu is lost|unknown)\s*\]?$", re.I)
_UNIT_BYTES = {"b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
               "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4}
_FIELD_NAME = re.compile(r"^[a-z][a-z0-9_.]*(\s*\[[^\]]*\])?$")


def _is_absent(value: str) -> bool:
    return value.strip() == "" or _ABSENT.match(value.strip()) is not None


def _to_bytes(value: str, header_unit: str | None) -> int | None:
    """Bytes of "143771 MiB" (csv) or "143771" under a "[MiB]" header (csv,nounits)."""
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)?\s*$", value)
    if not match:
        return None
    unit = (match.group(2) or header_unit or "MiB").lower()
    factor = _UNIT_BYTES.get(unit)
    number = to_float(match.group(1))
    if factor is None or number is None:
        return None
    return int(round(number * factor))


def _split_header(cell: str) -> tuple[str, str | None]:
    """("memory.total", "MiB") from "memory.total [MiB]"."""
    name, bracket, rest = cell.partition("[")
    unit = rest.split("]", 1)[0].strip() if bracket else ""
    return name.strip().lower(), (unit or None)


# Fields nvidia-smi --query-gpu names that a header line must hold one of (a line of other
# words and commas is not a header).
_KNOWN_FIELDS = {"index", "name", "gpu_name", "uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id",
                 "memory.total", "memory.used", "driver_version", "serial", "gpu_serial"}
# What a value of each identity field looks like: a noheader row whose values are not of
# their fields' kinds is the output of another field list (or not CSV at all).
_VALUE_SHAPES = {
    "index": re.compile(r"\d+"),
    "pci.bus_id": re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"),
    "uuid": re.compile(r"(?:GPU|MIG)-[0-9A-Fa-f-]+(?:/\d+/\d+)?"),
    "driver_version": re.compile(r"\d+(?:\.\d+)+"),
    "utilization.gpu": re.compile(r"\d+(?:\.\d+)?(?:\s*%)?"),
}
# A GPU name is words: never a bus id, a UUID, a number or an amount.
_NOT_A_NAME = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:|(?:GPU|MIG)-[0-9a-f]{8}|"
                         r"[\d.]+(?:\s*(?:%|[KMGT]i?B|W|MHz))?$|P\d+$|name$", re.I)


def _is_csv_header(row: list[str]) -> bool:
    names = [_split_header(c)[0] for c in row]
    return (len(row) >= 2 and all(_FIELD_NAME.match(c.strip().lower()) for c in row)
            and any(n in _KNOWN_FIELDS for n in names))


def parse_query_gpu_csv(text: str, fields: list[str] | None = None) -> Parsed[list[GpuInfo]]:
    """Parse ``nvidia-smi --query-gpu=... --format=csv[,nounits][,noheader]``.

    With ``noheader`` output pass the ``fields`` that were queried (the --query-gpu list);
    otherwise the header is the first line that names query fields (a pasted prompt line or
    another tool's output may come first: lines before it are skipped, and said so). Rows
    whose number of values is not the header's, or whose index is not a number, are not GPUs
    (the rest of a file that holds several outputs) and are skipped with a warning. Unmapped
    fields land in ``GpuInfo.extra`` keyed by the field name, as printed (absent values are
    left out rather than stored as text).
    """
    gpus: list[GpuInfo] = []
    warnings: list[str] = []
    if not isinstance(text, str):
        return Parsed(gpus, ["input is not text"])
    try:
        rows = [row for row in csv.reader(text.splitlines(), skipinitialspace=True)
                if any(c.strip() for c in row)]
    except csv.Error as exc:  # e.g. NUL bytes in corrupted captures
        return Parsed(gpus, [f"unreadable CSV: {exc}"])
    if fields is not None:
        header = [_split_header(f) for f in fields]
    else:
        start = next((i for i, row in enumerate(rows) if _is_csv_header(row)), None)
        if start is None:
            warnings.append("no header line: pass the queried fields to parse noheader output"
                            if rows else "no rows")
            return Parsed(gpus, warnings)
        if start:
            warnings.append(f"{start} line(s) before the header skipped")
        header = [_split_header(c) for c in rows[start]]
        rows = rows[start + 1:]
    names = [name for name, _ in header]
    if "index" not in names:
        warnings.append("no index column: GPUs numbered in row order")
    skipped = 0
    for row in rows:
        if len(row) != len(header) or ("index" in names and not _VALUE_SHAPES["index"]
                                       .fullmatch(row[names.index("index")].strip())):
            skipped += 1
            continue
        gpu = GpuInfo(index=len(gpus))
        for (name, unit), value in zip(header, row):
            _apply_gpu_field(gpu, name, unit, value.strip(), len(gpus), warnings)
        gpus.append(gpu)
    if skipped:
        warnings.append(f"{skipped} row(s) skipped: not {len(header)} values with a numeric "
                        "index (not GPU rows)")
    return Parsed(gpus, warnings)


def parse_query_gpu_any(text: str, field_sets: tuple[tuple[str, ...], ...]
                        ) -> Parsed[list[GpuInfo]]:
    """--query-gpu CSV with its header, or without one (``noheader``) in one of the
    ``field_sets`` that were queried: a field list is taken only when every row has its number
    of values and each value is of its field's kind, so another list's output is never read
    as this one's (a pstate "P0" as the driver version, a bus id as the GPU name). Nothing is
    read, with a warning, when no list fits."""
    parsed = parse_query_gpu_csv(text)
    if parsed.value or not text.strip():
        return parsed
    for fields in field_sets:
        parsed = parse_query_gpu_csv(text, list(fields))
        if parsed.value and not parsed.warnings:
            return parsed
    return Parsed([], ["no header line, and the values fit none of the queried field lists: "
                       "a --query-gpu CSV of other fields, or not one"])


def _apply_gpu_field(gpu: GpuInfo, name: str, unit: str | None, value: str, row: int,
                     warnings: list[str]) -> None:
    if _is_absent(value):
        return
    shape = _VALUE_SHAPES.get(name)
    if (shape is not None and not shape.fullmatch(value)) or (
            name in ("name", "gpu_name") and _NOT_A_NAME.match(value)):
        warnings.append(f"row {row + 1}: {value!r} is not a {name}")
        return
    if name == "index":
        index = to_int(value)
        if index is None:
            warnings.append(f"row {row + 1}: unreadable index {value!r}")
        else:
            gpu.index = index
    elif name in ("name", "gpu_name"):
        gpu.name = value
    elif name in ("memory.total", "memory.used"):
        amount = _to_bytes(value, unit)
        if amount is None:
            warnings.append(f"row {row + 1}: unreadable {name} {value!r}")
        elif name == "memory.total":
            gpu.memory_bytes = amount
        else:
            gpu.memory_used_bytes = amount
    elif name in ("pci.bus_id", "gpu_bus_id"):
        gpu.pci_bus_id = value
    elif name == "serial" or name == "gpu_serial":
        gpu.serial = value
    elif name in ("uuid", "gpu_uuid"):
        gpu.uuid = value
    elif name == "driver_version":
        gpu.driver_version = value
    elif name == "vbios_version":
        gpu.vbios = value
    else:
        # Same text for csv and csv,nounits: re-attach the header's unit where it was dropped.
        if unit and not value.endswith(unit):
            value = f"{value} {unit}"
        gpu.extra[name] = value
