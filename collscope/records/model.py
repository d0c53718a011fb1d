"""The ``prediction`` record of `collscope model predict`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class PredictionRecord:
    """One predicted collective x size x layout from `collscope model predict`.

    ``time_us`` is the cost model's time per operation, ``time_us_low``/``time_us_high`` its
    uncertainty band (``band_method`` says how it was formed); ``busbw_gbs`` is nccl-tests'
    convention (S / time x bus factor of ``world_size`` ranks). ``method`` names the formula and
    the fitted groups whose parameters it used.
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
    extrapolated: bool = False   # the size lies outside the sizes a group it used was fitted on
    method: str = ""
    band_method: str = ""
    kind: str = "prediction"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
