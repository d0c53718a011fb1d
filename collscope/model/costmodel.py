"""The fitted cost model: groups, fabric levels, the versioned model file, and prediction.

A model holds one robust alpha-beta fit per measured group (collective x N nodes x R ranks x
measured algorithm, see ``fit``), the run contexts of its inputs and the fit diagnostics. Its
fabric levels are derived from the flat groups when a prediction asks for them (``levels``):

- intra-node: a single-node group (N = 1, R >= 2) of the collective, the one nearest in R;
- inter-node: a multi-node group (N >= 2), the one nearest in log2 N, then in R, ties to the
  larger N. The nearest measured node count, not an average over node counts: libraries switch
  algorithms with the node count (NCCL runs tree/NVLS variants at 2 nodes), so the group closest
  to the target is the best witness of the regime it will run in.

Each level is (a, B) = (alpha / steps(n), B) of that group; ``formulas`` turns levels into times.
The model file is JSON with ``format`` and ``version``; a file of another version is refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from collscope import __version__
from collscope.collectives.table import COLLECTIVES
from collscope.model.data import GroupKey, Measurements
from collscope.model.fit import BAND_METHOD, FitError, GroupFit, fit_group
from collscope.model.formulas import (
    ALGOS,
    MULTI_ALGO,
    Level,
    MissingLevel,
    busbw,
    hierarchical_time,
    ring_time,
    steps,
    tree_time,
)
from collscope.records.model import PredictionRecord

# How a prediction's method ends when its size lies outside the sizes a group was fitted on.
EXTRAPOLATED_NOTE = "; extrapolated: "
OUTSIDE_FOR = " is outside the sizes fitted for "
MODEL_FORMAT = "collscope-model"
MODEL_VERSION = 2          # 2: typical band per size, tail runs (refit version 1 files)


class ModelError(ValueError):
    """A model file that cannot be used, or a prediction the model cannot make; says why."""


@dataclass
class Group:
    key: GroupKey
    fit: GroupFit

    def level(self) -> Level:
        if self.fit.busbw_gbs is None or not self.fit.identified:
            raise ModelError(f"B of {self.key.label} is unidentified: "
                             f"{self.fit.busbw_unidentified}")
        return Level(self.fit.alpha_us / steps(self.key.collective, self.key.world_size),
                     self.fit.busbw_gbs, self.key.label)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self.key), "world_size": self.key.world_size, **self.fit.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Group:
        """A group of a model file; ValueError / TypeError / KeyError naming the bad field."""
        if not isinstance(data, dict):
            raise TypeError(f"a group is {type(data).__name__}, not an object")
        if data["collective"] not in COLLECTIVES:
            raise ValueError(f"collective {data['collective']!r} is unknown; known: "
                             f"{', '.join(COLLECTIVES)}")
        if data["algo"] not in GROUP_ALGOS:
            raise ValueError(f"algo {data['algo']!r} is not one of {', '.join(GROUP_ALGOS)}")
        for name in ("nodes", "ranks_per_node", "rows", "sizes", "min_bytes", "max_bytes"):
            _require(data, name, _is_int(data[name]) and data[name] >= 1, "an integer >= 1")
        unidentified = data.get("busbw_unidentified") or ""
        _require(data, "busbw_unidentified", isinstance(unidentified, str), "a string")
        for name, (accepts, accepted) in FIT_NUMBERS.items():
            if name == "busbw_gbs" and unidentified:
                _require(data, name, data[name] is None, "null (B is unidentified)")
                continue
            _require(data, name, _is_number(data[name]) and accepts(data[name]), accepted)
        if data["min_bytes"] > data["max_bytes"]:
            raise ValueError(f"min_bytes {data['min_bytes']} exceeds max_bytes "
                             f"{data['max_bytes']}")
        key = GroupKey(data["collective"], data["nodes"], data["ranks_per_node"], data["algo"])
        names = set(GroupFit.__dataclass_fields__)
        return cls(key, GroupFit.from_dict({k: v for k, v in data.items() if k in names}))


GROUP_ALGOS = ("flat", "hierarchical")
# The numbers of a fit: what each accepts, and how the error message says it.
FIT_NUMBERS: dict[str, tuple[Callable[[float], bool], str]] = {
    "alpha_us": (lambda v: v >= 0, "a finite number >= 0"),
    "busbw_gbs": (lambda v: v > 0, "a finite number > 0"),
    "residual_p05": (lambda v: True, "a finite number"),
    "residual_p95": (lambda v: True, "a finite number"),
    "residual_rms": (lambda v: v >= 0, "a finite number >= 0"),
    "max_error_pct": (lambda v: v >= 0, "a finite number >= 0"),
    "band_low": (lambda v: v <= 0, "a finite number <= 0"),
    "band_high": (lambda v: v >= 0, "a finite number >= 0"),
    "repeat_low": (lambda v: v <= 0, "a finite number <= 0"),
    "repeat_high": (lambda v: v >= 0, "a finite number >= 0"),
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _require(data: dict[str, Any], name: str, ok: bool, accepted: str) -> None:
    if not ok:
        raise ValueError(f"{name} {data[name]!r} is not {accepted}")


@dataclass
class CostModel:
    groups: list[Group]
    contexts: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    held_out_nodes: list[int] = field(default_factory=list)
    collscope_version: str = __version__

    @property
    def collectives(self) -> list[str]:
        return sorted({g.key.collective for g in self.groups})

    def to_dict(self) -> dict[str, Any]:
        return {"format": MODEL_FORMAT, "version": MODEL_VERSION,
                "collscope_version": self.collscope_version,
                "fit_method": self.groups[0].fit.method if self.groups else "",
                "band_method": BAND_METHOD, "held_out_nodes": self.held_out_nodes,
                "groups": [g.to_dict() for g in self.groups], "contexts": self.contexts,
                "diagnostics": self.diagnostics}

    @classmethod
    def from_dict(cls, data: Any, name: str = "model") -> CostModel:
        if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
            raise ModelError(f"{name}: not a collscope model file (no \"format\": "
                             f"\"{MODEL_FORMAT}\"); write one with `collscope model fit`")
        if data.get("version") != MODEL_VERSION:
            raise ModelError(f"{name}: model file version {data.get('version')!r}; this "
                             f"collscope reads version {MODEL_VERSION}: refit with `collscope "
                             "model fit`")
        if not isinstance(data.get("groups"), list):
            raise ModelError(f"{name}: \"groups\" of the model file is not a list; refit "
                             "with `collscope model fit`")
        groups = []
        for index, group in enumerate(data["groups"]):
            try:
                groups.append(Group.from_dict(group))
            except KeyError as error:
                raise ModelError(f"{name}: group {index + 1} of the model file has no field "
                                 f"{error}; refit with `collscope model fit`") from None
            except (TypeError, ValueError) as error:
                raise ModelError(f"{name}: group {index + 1} of the model file: {error}; refit "
                                 "with `collscope model fit`") from None
        return cls(groups=groups, contexts=list(data.get("contexts") or []),
                   diagnostics=list(data.get("diagnostics") or []),
                   held_out_nodes=list(data.get("held_out_nodes") or []),
                   collscope_version=str(data.get("collscope_version", "")))

    # -- fabric levels -------------------------------------------------------------------------

    def node_counts(self, collective: str) -> list[int]:
        """The node counts the flat groups of ``collective`` were fitted on, ascending."""
        return sorted({g.key.nodes for g in self.flat_groups(collective)})

    def flat_groups(self, collective: str) -> list[Group]:
        return [g for g in self.groups if g.key.collective == collective and g.key.algo == "flat"]

    def levels(self, collective: str, nodes: int, ranks_per_node: int,
               ) -> tuple[Group | None, Group | None]:
        """(intra-node group, inter-node group) whose parameters a prediction uses."""
        flat = self.flat_groups(collective)
        singles = [g for g in flat if g.key.nodes == 1 and g.key.ranks_per_node >= 2]
        multis = [g for g in flat if g.key.nodes >= 2]
        intra = min(singles, key=lambda g: (abs(g.key.ranks_per_node - ranks_per_node),
                                            -g.key.ranks_per_node), default=None)
        inter = min(multis, key=lambda g: (abs(math.log2(g.key.nodes) - math.log2(nodes)),
                                           abs(g.key.ranks_per_node - ranks_per_node),
                                           -g.key.nodes), default=None)
        return intra, inter


def build(measurements: Measurements, held_out_nodes: list[int] | None = None) -> CostModel:
    """Fit every group of ``measurements`` (node counts in ``held_out_nodes`` left out)."""
    held = sorted(set(held_out_nodes or []))
    groups: list[Group] = []
    diagnostics = [*measurements.warnings, *measurements.skipped]
    for key, samples in measurements.groups.items():
        if key.nodes in held:
            continue
        try:
            fit = fit_group(samples, key.collective, key.world_size)
        except FitError as error:
            diagnostics.append(f"{key.label}: not fitted: {error}")
            continue
        groups.append(Group(key, fit))
        if not fit.identified:
            diagnostics.append(f"{key.label}: B unidentified: {fit.busbw_unidentified}; "
                               "predictions that need it are refused (sweep sizes where time "
                               "grows, e.g. a larger -e)")
        if fit.tails:
            diagnostics.append(tail_note(groups[-1]))
        for outlier in fit.outliers:
            diagnostics.append(f"{key.label}: outlier row {outlier.source}: "
                               f"{outlier.time_us:g} us is {outlier.error_pct:+.0f}% off the "
                               f"fit ({outlier.model_us:.4g} us); left out")
    diagnostics.extend(_consistency(groups))
    contexts = [c for c in measurements.contexts if c["nodes"] not in held]
    return CostModel(groups=groups, contexts=contexts, diagnostics=diagnostics,
                     held_out_nodes=held)


def _consistency(groups: list[Group]) -> list[str]:
    """Multi-node groups of one collective whose bandwidths disagree by more than 15 %: a ring
    model gives them one B, so one of them ran another algorithm or setting."""
    notes = []
    for collective in sorted({g.key.collective for g in groups}):
        multis = [(g, g.fit.busbw_gbs) for g in groups if g.key.collective == collective
                  and g.key.nodes >= 2 and g.key.algo == "flat" and g.fit.busbw_gbs is not None]
        if len(multis) < 2:
            continue
        high, high_bw = max(multis, key=lambda item: item[1])
        low, low_bw = min(multis, key=lambda item: item[1])
        ratio = high_bw / low_bw
        if ratio > 1.15:
            notes.append(f"{collective}: inter-node B of {high.key.label} "
                         f"({high_bw:.4g} GB/s) is {ratio:.2f}x that of "
                         f"{low.key.label} ({low_bw:.4g} GB/s): another algorithm "
                         "or setting at one node count; predictions use the nearest node count")
    return notes


# ---------------------------------------------------------------------------------------------
# Prediction
# ---------------------------------------------------------------------------------------------


def available_algos(model: CostModel, collective: str, nodes: int, ranks_per_node: int,
                    ) -> dict[str, str]:
    """Algorithm -> "" when the model can predict it for this layout, else the reason not."""
    intra, inter = model.levels(collective, nodes, ranks_per_node)
    need_intra = ranks_per_node > 1
    missing_intra = "no single-node group of this collective (fit a 1-node run)"
    missing_inter = "no multi-node group of this collective (fit a run on >= 2 nodes)"
    found: dict[str, str] = {}
    ring_level = inter if nodes > 1 else intra
    found["ring"] = "" if ring_level else (missing_inter if nodes > 1 else missing_intra)
    for algo in ("tree", "hierarchical"):
        if collective not in MULTI_ALGO:
            found[algo] = f"the model has no {algo} formula for {collective}"
        elif need_intra and intra is None:
            found[algo] = missing_intra
        elif nodes > 1 and inter is None:
            found[algo] = missing_inter
        else:
            found[algo] = ""
    # A prediction that rests on an unidentified B would present the solver's arbitrary value
    # as a bandwidth: the algorithm is unavailable instead (auto takes another, or refuses).
    for algo, why in found.items():
        blind = [g for g in used_groups(algo, nodes, ranks_per_node, intra, inter)
                 if not g.fit.identified]
        if not why and blind:
            found[algo] = "; ".join(f"B of {g.key.label} is unidentified: "
                                    f"{g.fit.busbw_unidentified}" for g in blind)
    return found


def predict(model: CostModel, collective: str, sizes: list[int], nodes: int,
            ranks_per_node: int, algo: str = "auto",
            candidates: tuple[str, ...] = ALGOS) -> list[PredictionRecord]:
    """One record per size; ``auto`` takes the fastest of ``candidates`` the model holds."""
    if collective not in model.collectives:
        raise ModelError(f"--collective: {collective} is not in the model (it holds "
                         f"{', '.join(model.collectives) or 'nothing'})")
    if nodes < 1 or ranks_per_node < 1:
        raise ModelError(f"--nodes/--ranks-per-node: {nodes} x {ranks_per_node}: both must "
                         "be >= 1")
    usable = available_algos(model, collective, nodes, ranks_per_node)
    if algo == "auto":
        chosen = [a for a in candidates if not usable[a]]
        if not chosen:
            reasons = "; ".join(dict.fromkeys(usable[a] for a in candidates))
            raise ModelError(f"{collective} on {nodes}x{ranks_per_node}: no algorithm "
                             f"predictable ({reasons})")
    elif algo not in ALGOS:
        raise ModelError(f"--algo: '{algo}' is not accepted; use auto, {', '.join(ALGOS)}")
    elif usable[algo]:
        raise ModelError(f"--algo {algo}: cannot predict {collective} on {nodes}x"
                         f"{ranks_per_node}: {usable[algo]}")
    else:
        chosen = [algo]
    intra, inter = model.levels(collective, nodes, ranks_per_node)
    records = []
    for size in sizes:
        options = [(_time(a, collective, size, nodes, ranks_per_node, intra, inter), a)
                   for a in chosen]
        time_us, best = min(options)
        records.append(_record(model, collective, size, nodes, ranks_per_node, best, time_us,
                               intra, inter, auto=algo == "auto"))
    return records


def _time(algo: str, collective: str, size: int, nodes: int, per_node: int,
          intra: Group | None, inter: Group | None) -> float:
    intra_level = intra.level() if intra else None
    inter_level = inter.level() if inter else None
    try:
        if algo == "ring":
            level = inter_level if nodes > 1 else intra_level
            if level is None:
                raise MissingLevel("no fabric level for a ring")
            return ring_time(collective, size, nodes, per_node, level)
        if algo == "tree":
            return tree_time(size, nodes, per_node, intra_level, inter_level)
        return hierarchical_time(size, nodes, per_node, intra_level, inter_level)
    except MissingLevel as error:
        raise ModelError(str(error)) from None


def used_groups(algo: str, nodes: int, per_node: int, intra: Group | None,
                inter: Group | None) -> list[Group]:
    if algo == "ring":
        return [g for g in [inter if nodes > 1 else intra] if g]
    return [g for g, needed in ((intra, per_node > 1), (inter, nodes > 1)) if needed and g]


def extrapolation(value: float, low: float, high: float) -> float:
    """How far ``value`` lies outside [low, high], as a factor >= 1 (1.0: inside)."""
    return max(value / high, low / value, 1.0)


def tail_note(group: Group) -> str:
    """"all_reduce 4x8: 1 of 4 runs at 4 nodes was 2.0x slower ..." ("" without tail runs)."""
    tails = group.fit.tails
    if not tails:
        return ""
    factors = " and ".join(f"{t.slowdown:.1f}x" for t in tails)
    return (f"{group.key.label}: {len(tails)} of {group.fit.runs} runs at {group.key.nodes} "
            f"node(s) {'was' if len(tails) == 1 else 'were'} {factors} slower than the runs' "
            f"median ({', '.join(t.run for t in tails)}); left out of the fit and the typical band")


def _record(model: CostModel, collective: str, size: int, nodes: int, per_node: int,
            algo: str, time_us: float, intra: Group | None, inter: Group | None,
            auto: bool) -> PredictionRecord:
    used = used_groups(algo, nodes, per_node, intra, inter)
    bands = [g.fit.band_at(size) for g in used]
    low = min((b[0] for b in bands), default=0.0)
    high = max((b[1] for b in bands), default=0.0)
    world = nodes * per_node
    parts = [f"{g.key.label} fit (a={g.level().step_us:.3g} us/step, "
             f"B={g.fit.busbw_gbs:.4g} GB/s)" for g in used]
    method = f"{algo} formula{' (auto: fastest the model holds)' if auto else ''}; " \
             f"{'; '.join(parts)}"
    outside = [g.key.label for g in used if not g.fit.min_bytes <= size <= g.fit.max_bytes]
    if outside:
        method += f"{EXTRAPOLATED_NOTE}{size} bytes{OUTSIDE_FOR}{', '.join(outside)}"
    fitted = model.node_counts(collective)
    size_factor = max((extrapolation(size, g.fit.min_bytes, g.fit.max_bytes) for g in used),
                      default=1.0)
    nodes_factor = extrapolation(nodes, fitted[0], fitted[-1]) if fitted else 1.0
    tails = [g for g in used if g.fit.tails]
    return PredictionRecord(
        collective=collective, size_bytes=size, nodes=nodes, ranks_per_node=per_node,
        world_size=world, algo=algo, time_us=time_us,
        busbw_gbs=busbw(size, time_us, collective, world),
        time_us_low=time_us * math.exp(low), time_us_high=time_us * math.exp(high),
        algbw_gbs=size / (time_us * 1e3) if time_us > 0 else 0.0,
        extrapolated=size_factor > 1 or nodes_factor > 1, size_extrapolation=size_factor,
        nodes_extrapolation=nodes_factor, fitted_nodes=fitted,
        tail="; ".join(tail_note(g) for g in tails),
        tail_slowdown=max((t.slowdown for g in tails for t in g.fit.tails), default=None),
        method=method, band_method=band_method(used))


def band_method(used: list[Group]) -> str:
    """BAND_METHOD and, per group a prediction uses, what its repeat spread compared."""
    spreads = [f"{g.key.label}: {g.fit.spread_method}" for g in used if g.fit.spread_method]
    return BAND_METHOD + (f"; {'; '.join(spreads)}" if spreads else "")
