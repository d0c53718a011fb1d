"""Measurements for the model: result rows of loaded inputs grouped by collective and layout.

Inputs are read by ``collscope.records.load`` (collscope JSON Lines or nccl-tests / rccl-tests
logs through the importer). The layout of a row comes from its run record: ``nodes`` and
``ranks_per_node`` as ``collscope bench`` writes them (from the launcher), or as the importer
found them in a log (distinct hosts of the ``# Using devices`` block, a ``====== N-node ======``
separator; ``extra.nodes_method`` says which). Rows whose layout is unknown, that failed
verification or that have no time are skipped, each with a reason; so are the rows of every
dtype and op but one in a group (``_one_type``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from collscope.collectives.table import COLLECTIVES
from collscope.model.fit import Sample
from collscope.records.load import Input, Run


@dataclass(frozen=True, order=True)
class GroupKey:
    """One collective measured with one algorithm on N nodes x R ranks."""

    collective: str
    nodes: int
    ranks_per_node: int
    algo: str = "flat"            # as measured: flat (the library's choice) or hierarchical

    @property
    def world_size(self) -> int:
        return self.nodes * self.ranks_per_node

    @property
    def label(self) -> str:
        suffix = "" if self.algo == "flat" else f" {self.algo}"
        return f"{self.collective} {self.nodes}x{self.ranks_per_node}{suffix}"


@dataclass
class Measurements:
    groups: dict[GroupKey, list[Sample]] = field(default_factory=dict)
    contexts: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # The loader's warnings (records.load): malformed lines skipped, guesses made. fit and
    # check say each one (once the run has not been refused, so bad input stays one line).
    warnings: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(len(samples) for samples in self.groups.values())


def layout(run: Run, world_size: int) -> tuple[int, int, str]:
    """(nodes, ranks per node, how) of a run; 0, 0 and the reason where unknown."""
    context = run.context
    nodes = _int(context.get("nodes"))
    per_node = _int(context.get("ranks_per_node"))
    extra = context.get("extra")
    extra = extra if isinstance(extra, dict) else {}
    how = str(extra.get("nodes_method") or f"run record of `collscope {context.get('command')}`")
    if nodes >= 1 and not per_node and world_size and world_size % nodes == 0:
        per_node = world_size // nodes
    if nodes < 1 or per_node < 1:
        return 0, 0, f"node layout unknown ({how})"
    if world_size and nodes * per_node != world_size:
        return 0, 0, (f"{nodes} nodes x {per_node} ranks per node is not the world size "
                      f"{world_size}")
    return nodes, per_node, how


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def collect(inputs: list[Input]) -> Measurements:
    """Every usable result row of ``inputs``, grouped; what was skipped and why."""
    # Per group, the rows of each (dtype, op): -d all -o all measures several in one run.
    groups: dict[GroupKey, dict[tuple[str, str], list[Sample]]] = defaultdict(
        lambda: defaultdict(list))
    found = Measurements(warnings=[w for source in inputs for w in source.warnings])
    for source in inputs:
        for run in source.runs:
            if not run.results:
                continue
            world = run.results[0].world_size or int(run.context.get("world_size") or 0)
            nodes, per_node, how = layout(run, world)
            if not nodes:
                found.skipped.append(f"{run.label}: {len(run.results)} rows skipped: {how}")
                continue
            found.contexts.append(_context(run, nodes, per_node, how))
            extra = run.context.get("extra")
            lines = (extra.get("result_lines") if isinstance(extra, dict) else None) or []
            bad = 0
            for index, result in enumerate(run.results):
                placement = "in-place" if result.in_place else "out-of-place"
                where = f"{run.label}" + (f" line {lines[index]}" if index < len(lines) else "")
                where += f" {placement}"
                if result.collective not in COLLECTIVES or result.time_us <= 0 \
                        or result.size_bytes <= 0:
                    bad += 1
                    continue
                if result.wrong:
                    found.skipped.append(f"{where}: {result.wrong} wrong elements; skipped")
                    continue
                key = GroupKey(result.collective, nodes, per_node,
                               "hierarchical" if result.algo == "hierarchical" else "flat")
                groups[key][(result.dtype, result.op)].append(
                    Sample(result.size_bytes, result.time_us, where, run.label, placement))
            if bad:
                found.skipped.append(f"{run.label}: {bad} rows of an unknown collective or "
                                     "without a size and time; skipped")
    found.groups = {key: _one_type(key, kinds, found.skipped)
                    for key, kinds in sorted(groups.items())}
    return found


def _one_type(key: GroupKey, kinds: dict[tuple[str, str], list[Sample]],
              skipped: list[str]) -> list[Sample]:
    """The rows of one dtype and op: a reduction's time depends on its element type and
    operation (int8 prod and double sum are not one curve), and the model has one alpha and B
    per group. The combination with the most rows is kept (nccl-tests' default float sum, or
    float for data movement, on a tie); each other one is skipped with a line."""
    def rank(kind: tuple[str, str]) -> tuple[int, bool, bool, tuple[str, str]]:
        dtype, op = kind
        return (len(kinds[kind]), dtype == "float", op in ("sum", "none"), kind)

    chosen = max(kinds, key=rank)
    others = sorted(kind for kind in kinds if kind != chosen)
    if others:
        what = ", ".join(f"{dtype} {op} ({len(kinds[(dtype, op)])})"
                         for dtype, op in others[:6])
        what += f" and {len(others) - 6} more" if len(others) > 6 else ""
        skipped.append(f"{key.label}: fitted on {chosen[0]} {chosen[1]} "
                       f"({len(kinds[chosen])} rows); rows of other dtypes/ops skipped, since "
                       f"one group is one dtype and op: {what}")
    return kinds[chosen]


def _context(run: Run, nodes: int, per_node: int, how: str) -> dict[str, Any]:
    context = run.context
    devices = context.get("devices")
    devices = devices if isinstance(devices, list) else []
    names = sorted({str(d.get("name")) for d in devices if isinstance(d, dict) and d.get("name")})
    return {"source": run.label, "command": context.get("command"),
            "backend": context.get("backend"), "nodes": nodes, "ranks_per_node": per_node,
            "layout_method": how, "devices": names, "versions": context.get("versions") or {},
            "env": context.get("env") or {}, "timing": context.get("timing") or "",
            "collectives": sorted({r.collective for r in run.results})}
