"""``rocm-smi --showtopo``: the GPU x GPU matrices under ==== banners."""

from __future__ import annotations

from collscope.parsers.common import GPU_LABEL, LINK_TYPES, MAX_GPUS, Parsed, Topology, to_int
from collscope.parsers.rocm_smi.common import banner_title, gpu_fields, numbered


def _sections(text: str) -> dict[str, list[tuple[int, str]]]:
    """Lines of the showtopo blocks, keyed weight / hops / link_type / numa."""
    sections: dict[str, list[tuple[int, str]]] = {}
    current: str | None = None
    for lineno, line in numbered(text):
        title = banner_title(line)
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
        if all(GPU_LABEL.match(token) for token in tokens):
            columns = [_label_index(token) for token in tokens]
            continue
        if GPU_LABEL.match(tokens[0]) is None:
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
    match = GPU_LABEL.match(token)
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


def build_topology(
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


def size_of(indices: list[int], warnings: list[str]) -> int:
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
    numa_fields = gpu_fields(sections.get("numa", []), warnings)
    indices = [i for found in cells.values() for pair in found for i in pair]
    indices += [i for i in numa_fields]
    n = size_of(indices, warnings)
    topo = build_topology(n, cells["link_type"], cells["weight"], cells["hops"], warnings)
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
