"""The records of `collscope model`: ``prediction`` (predict); ``model_fit`` and one
``model_group`` per fitted group (fit); ``check``, its ``check_band`` and ``check_row`` records
(check); ``plan`` and one ``plan_row`` per node count (plan).

fit, check and plan write their summary record first and ``kind`` as the first key of each
record (``kind_before`` their first field), as they always have; predict's records end with it."""

from __future__ import annotations

from typing import Any, ClassVar

from collscope.records.base import Record


class PredictionRecord(Record, tag="prediction"):
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
    fitted_nodes: list[int] = []   # node counts the model was fitted on
    tail: str = ""               # tail runs of the groups used: "1 of 4 runs ... was 2.0x slower"
    tail_slowdown: float | None = None   # the largest of their slowdowns
    method: str = ""
    band_method: str = ""

    joins: ClassVar[str | None] = "predictions"


# -- fit ---------------------------------------------------------------------------------------


class ModelFitRecord(Record, tag="model_fit"):
    """The fit as a whole: the model file written (``-o`` as given), the methods of the fit and
    of its typical band, the node counts held out, and what the fit said about its inputs."""

    model: str
    fit_method: str
    band_method: str
    held_out_nodes: list[int]
    diagnostics: list[str]

    kind_before: ClassVar[str | None] = "model"


class ModelGroupRecord(Record, tag="model_group"):
    """One fitted group (a collective on N nodes x R ranks) as the model file holds it.

    ``fit`` is the group's fit (collscope.model.fit.GroupFit: alpha_us, busbw_gbs, the rows and
    sizes used, residual percentiles, typical band, tail runs, outliers, methods); its fields
    are written beside the group's own, not nested."""

    collective: str
    nodes: int
    ranks_per_node: int
    algo: str                    # as measured: flat (the library's choice) or hierarchical
    world_size: int
    fit: dict[str, Any]

    kind_before: ClassVar[str | None] = "collective"

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        fit = data.pop("fit")
        return {**data, **fit}

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> dict[str, Any]:
        own = set(cls.__struct_fields__) | {"kind"}
        return {**{k: v for k, v in raw.items() if k in own},
                "fit": {k: v for k, v in raw.items() if k not in own}}


# -- check -------------------------------------------------------------------------------------


class CheckRecord(Record, tag="check"):
    """The check as a whole: the model file, how errors and the band were checked, the
    measured groups not checked (and why), and how many measured medians lie in the band."""

    model: str
    method: str
    band_method: str
    skipped: list[str]
    sizes: int                   # measured sizes over every band
    medians_in_band: int         # of them, those whose measured median lies in the typical band
    medians_in_band_pct: float | None    # None when no size was measured

    kind_before: ClassVar[str | None] = "model"


class CheckBandRecord(Record, tag="check_band"):
    """One collective x layout x size band: busbw error of the predictions over its rows."""

    collective: str
    nodes: int
    ranks_per_node: int
    band: str                     # "< 1 MiB", "1-16 MiB", "16-256 MiB", ">= 256 MiB"
    rows: int
    median_error_pct: float
    max_error_pct: float
    in_sample: bool               # the model was fitted on this layout
    sizes: int = 0                # distinct measured sizes
    medians_in_band: int = 0      # of them, those whose measured median lies in the band

    kind_before: ClassVar[str | None] = "collective"


class CheckRowRecord(Record, tag="check_row"):
    """One measured row against its prediction: |predicted / measured - 1| x 100 of busbw."""

    collective: str
    nodes: int
    ranks_per_node: int
    size_bytes: int
    measured_busbw_gbs: float
    predicted_busbw_gbs: float
    error_pct: float
    algo: str                     # the algorithm predicted (the fastest of the candidates)
    source: str                   # the input and line the row came from

    kind_before: ClassVar[str | None] = "collective"


# -- plan --------------------------------------------------------------------------------------


class PlanRecord(Record, tag="plan"):
    """What was planned (model file, preset or parameter count, dtype, DDP/FSDP and its
    settings) and where the compute per step and the overlap came from (``*_source``)."""

    model: str
    preset: str | None
    params: int
    dtype: str
    parallel: str
    bucket_cap_mb: float
    comm_hook: str
    overlap: float
    overlap_source: str
    step_compute_ms: float | None
    step_compute_source: str
    tokens_per_rank_per_step: int | None
    notes: list[str]

    kind_before: ClassVar[str | None] = "model"


class PlanRowRecord(Record, tag="plan_row"):
    """One node count: the step's messages, their predicted time and band, exposed time, step
    time, tokens/s, scaling efficiency against the first row with a step time, and the DDP
    knob that helps most (None where not known; ``note`` says why a row was not predicted)."""

    nodes: int
    ranks_per_node: int
    world_size: int
    messages: int
    bytes_per_step: int
    comm_ms: float | None = None
    comm_ms_low: float | None = None
    comm_ms_high: float | None = None
    algos: dict[str, int] = {}
    extrapolated: int = 0
    phase_ms: dict[str, float] = {}
    exposed_ms: float | None = None
    step_ms: float | None = None
    tokens_per_s: float | None = None
    scaling_efficiency: float | None = None
    best_knob: str | None = None
    best_knob_comm_ms: float | None = None
    note: str = ""

    kind_before: ClassVar[str | None] = "nodes"
