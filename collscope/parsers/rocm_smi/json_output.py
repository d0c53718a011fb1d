"""``rocm-smi --json``: GPU info, live readings and the topology pairs."""

from __future__ import annotations

import json
from typing import Any

from collscope.parsers.common import MAX_GPUS, GpuInfo, Parsed, Topology, to_int
from collscope.parsers.rocm_smi.common import norm_key, number_of, present_of, to_gpu_info
from collscope.parsers.rocm_smi.records import CARD_KEY, JSON_PAIR_KEY, GpuStatus
from collscope.parsers.rocm_smi.topology import build_topology, size_of


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
        match = CARD_KEY.match(str(key))
        if not isinstance(value, dict):
            warnings.append(f"JSON key {str(key)[:30]!r} does not hold an object")
            continue
        # All-digit keys ('0': '16.0GT/s x16 *') are clock-level lists that rocm-smi flattens
        # into one object, each clock overwriting the last; they mean nothing on their own.
        flat = {norm_key(str(k)): _scalar(v) for k, v in value.items() if not str(k).isdigit()}
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
        info = to_gpu_info(index, cards[index], warnings)
        if info.driver_version is None:
            info.driver_version = present_of(system.get("driver version"))
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
            if number_of(present_of(card.get(key))) is not None:
                status.temperature_c = number_of(card[key])
                status.temperature_sensor = sensor
                break
        for key in _JSON_POWER:
            if number_of(present_of(card.get(key))) is not None:
                status.power_w = number_of(card[key])
                break
        status.power_cap_w = number_of(present_of(card.get("max graphics package power (w)")))
        status.gpu_percent = number_of(present_of(card.get("gpu use (%)")))
        # --showmemuse: "GPU Memory Allocated (VRAM%)" (ROCm 5.x-7.x), "GPU memory use (%)" (4.x)
        status.vram_percent = number_of(present_of(card.get("gpu memory allocated (vram%)")
                                                   or card.get("gpu memory use (%)")))
        status.fan_percent = number_of(present_of(card.get("fan speed (%)")))
        status.sclk_mhz = number_of(present_of(card.get("sclk clock speed:")))
        status.mclk_mhz = number_of(present_of(card.get("mclk clock speed:")))
        status.perf_level = present_of(card.get("performance level"))
        status.device_id = present_of(card.get("device id"))
        status.guid = present_of(card.get("guid"))
        status.node_id = to_int(card.get("node id", ""))
        status.name = present_of(card.get("card series"))
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
        match = JSON_PAIR_KEY.match(key)
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
    n = size_of(indices, warnings)
    topo = build_topology(n, cells["link type"], cells["weight"], cells["hops"], warnings)
    for i in range(n):
        topo.numa_node[i] = to_int(cards.get(i, {}).get("(topology) numa node", ""))
        # The JSON leaves the diagonal out; the text form prints 0 there.
        if cells["weight"]:
            topo.weight[i][i] = 0
        if cells["hops"]:
            topo.hops[i][i] = 0
    return Parsed(topo, warnings)
