"""The ``prediction`` record of `collscope model predict`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class PredictionRecord:
    """One predicted collective x size x layout from `collscope model predict`.

    ``time_us`` is the cost model's time per operation, ``time_us_low``/``time_us_high`` its
    typical band (``band_method`` says how it was formed; runs much slower than their repeats
    are not in it but in ``tail``); ``busbw_gbs`` is nccl-tests' convention (S / time x bus
    factor of ``world_size`` ranks). ``method`` names the formula and the fitted groups whose
    parameters it used. ``size_extrapolation`` / ``nodes_extrapolation`` are how far the size /
    node count lies outside those fitted (1.0 inside; 2.0: twice the largest, or half the
    smallest); ``extrapolated`` is either being outside.
    """

    collective: str
    size_bytes: int
    nodes: int
    ranks_per_node: int
    world_size: int
    algo: str                    # ring, tree or hierarchical
    time_us: float
    busbw_gbs: float
    time_us_low: float
    time_us_high: float
    algbw_gbs: float = 0.0
    extrapolated: bool = False   # size or node count outside what the groups used were fitted on
    size_extrapolation: float = 1.0
    nodes_extrapolation: float = 1.0
    fitted_nodes: list[int] = field(default_factory=list)   # node counts the model was fitted on
    tail: str = ""               # tail runs of the groups used: "1 of 4 runs ... was 2.0x slower"
    tail_slowdown: float | None = None   # the largest of their slowdowns
    method: str = ""
    band_method: str = ""
    kind: str = "prediction"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
