"""The arithmetic of `collscope train`, pure: statistics, exposed communication, overlap,
bytes per step, ranking and the recommended DDP call. No torch, so it is tested by tables.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from collscope.collectives.dtypes import DTYPES
from collscope.config_flags import HIER_CHUNK_DEFAULT
from collscope.stats.intervals import MedianCI, median_ci
from collscope.stats.summary import iqr, quantile
from collscope.train.config import DDP_DEFAULT, DDPKnobs

# PowerSGD as collscope registers it (see parallel.make_hook): rank-1 approximation, and
# torch's default rule for which matrices are worth compressing.
POWERSGD_RANK = 1
POWERSGD_MIN_COMPRESSION_RATE = 2
# What the compression hooks put on the wire (collscope bench dtype names); the other hooks
# send the gradients' own dtype.
HOOK_WIRE_DTYPE = {"fp16": "half", "bf16": "bfloat16"}


@dataclass(frozen=True)
class Spread:
    """Median and spread of per-step times (milliseconds)."""

    median: float
    p25: float
    p75: float
    min: float
    max: float

    @property
    def iqr(self) -> float:
        return self.p75 - self.p25


def spread(values: Sequence[float]) -> Spread:
    return Spread(median=statistics.median(values), p25=quantile(values, 0.25),
                  p75=quantile(values, 0.75), min=min(values), max=max(values))


def paired_differences(sync_ms: Sequence[float], nosync_ms: Sequence[float]) -> list[float]:
    """Per step: the synchronised step minus the step without sync run beside it on the same
    batch. Pairing cancels what both steps of a pair share (the batch, the machine's speed at
    that moment), which the difference of two separate medians does not."""
    return [a - b for a, b in zip(sync_ms, nosync_ms, strict=True)]


def exposed_comm(sync_ms: Sequence[float], nosync_ms: Sequence[float]) -> float:
    """Exposed communication: the median of the per-pair differences (sync minus no-sync).

    Not clamped: a small negative value means the communication hid completely and the rest
    is noise, which the reader should see.
    """
    return statistics.median(paired_differences(sync_ms, nosync_ms))


def exposed_comm_ci(sync_ms: Sequence[float], nosync_ms: Sequence[float]) -> MedianCI:
    """The distribution-free confidence interval of that median (stats.intervals.median_ci: 95%,
    or [min, max] and its lower coverage with too few steps)."""
    return median_ci(paired_differences(sync_ms, nosync_ms))


def exposed_comm_ci_label(steps: int) -> str:
    """'95% CI (order statistics)', the level exposed_comm_ci reaches with ``steps`` pairs:
    it depends only on the count, so the header can say it before measuring (3 steps: 75%)."""
    import math

    confidence = median_ci(range(max(1, steps))).confidence
    label = f"{math.floor(confidence * 100):.0f}% CI (order statistics"
    return label + (")" if confidence >= 0.95 else f"; {steps} steps are too few for 95%)")


def paired_iqr(sync_ms: Sequence[float], nosync_ms: Sequence[float]) -> float:
    """Spread of the per-step differences (each sync step against the no-sync step run beside
    it on the same batch): how far one exposed-comm figure can be trusted."""
    return iqr(paired_differences(sync_ms, nosync_ms))


def overlap_fraction(exposed_ms: float | None, pure_ms: float | None,
                     ) -> tuple[float | None, bool]:
    """(1 - exposed / pure clamped to [0, 1], whether it was clamped); None when undefined.

    Noise can push the raw value just outside [0, 1] (exposed below zero, or above the pure
    time when the step's communication competes with compute for the links and cores).
    """
    if exposed_ms is None or not pure_ms or pure_ms <= 0:
        return None, False
    raw = 1.0 - exposed_ms / pure_ms
    clamped = min(1.0, max(0.0, raw))
    return clamped, clamped != raw


@dataclass(frozen=True)
class Bucket:
    """One DDP gradient bucket (or one FSDP shard group): its bytes and its tensors' shapes."""

    nbytes: int
    shapes: tuple[tuple[int, ...], ...] = ()


def _numel(shape: tuple[int, ...]) -> int:
    total = 1
    for dim in shape:
        total *= dim
    return total


def powersgd_elements(shapes: Sequence[tuple[int, ...]], rank: int = POWERSGD_RANK,
                      min_compression_rate: float = POWERSGD_MIN_COMPRESSION_RATE,
                      ) -> tuple[int, int, int]:
    """(uncompressed, P, Q) elements PowerSGD all-reduces for one bucket.

    As torch's powerSGD_hook: each gradient is viewed as (shape[0], rest); it is compressed to
    P (n x r) and Q (m x r) when (n + m) x r x min_compression_rate < n x m, else all-reduced
    whole with the other uncompressed ones.
    """
    uncompressed = p_total = q_total = 0
    for shape in shapes:
        n = shape[0] if shape else 1
        m = _numel(shape) // n if n else 0
        r = min(n, m, rank)
        if (n + m) * r * min_compression_rate < n * m:
            p_total += n * r
            q_total += m * r
        else:
            uncompressed += n * m
    return uncompressed, p_total, q_total


def comm_messages(hook: str, buckets: Sequence[Bucket], grad_dtype: str,
                  ) -> list[tuple[int, str]]:
    """What one synchronised step sends: (bytes, dtype) per all-reduce, in order.

    ``grad_dtype`` is the gradients' dtype (collscope bench names: float, bfloat16, half).
    fp16/bf16 hooks send each bucket at 2 bytes per element; PowerSGD sends its uncompressed
    tensors, then P, then Q, per bucket; the flat and the hierarchical all-reduce send the
    bucket as it is.
    """
    element_size = DTYPES[grad_dtype].size
    messages: list[tuple[int, str]] = []
    for bucket in buckets:
        numel = bucket.nbytes // element_size
        if hook == "powersgd":
            for part in powersgd_elements(bucket.shapes):
                if part:
                    messages.append((part * element_size, grad_dtype))
            continue
        wire = HOOK_WIRE_DTYPE.get(hook, grad_dtype)
        messages.append((numel * DTYPES[wire].size, wire))
    return messages


def speedup(baseline_ms: float | None, ms: float) -> float | None:
    """How many times faster than the baseline step (> 1 is faster)."""
    if not baseline_ms or ms <= 0:
        return None
    return baseline_ms / ms


# Above this max/min ratio of the configurations' no-sync steps, rows do not compare.
DRIFT_LIMIT = 1.25


def drift(nosync_medians: Sequence[float]) -> float:
    """max / min of the configurations' median no-sync steps (1.0 = steady).

    The step without gradient sync is the same compute in every configuration of a sweep (the
    DDP knobs change communication), so when it moves, the machine's speed moved between rows:
    other jobs, clocks, thermals. Exposed comm is measured pairwise inside each row and holds;
    comparing step times across rows does not.
    """
    values = [v for v in nosync_medians if v > 0]
    return max(values) / min(values) if len(values) > 1 else 1.0


def rank_by_step_time(rows: Sequence[dict]) -> list[dict]:
    """Rows ordered fastest first; ties keep their measured order."""
    return sorted(rows, key=lambda row: row["step_time_ms"])


HOOK_CALLS = {
    "fp16": "model.register_comm_hook(None, default_hooks.fp16_compress_hook)",
    "bf16": "model.register_comm_hook(None, default_hooks.bf16_compress_hook)",
    "powersgd": ("model.register_comm_hook(powerSGD_hook.PowerSGDState(process_group=None, "
                 f"matrix_approximation_rank={POWERSGD_RANK}, start_powerSGD_iter=2), "
                 "powerSGD_hook.powerSGD_hook)"),
}


def ddp_call(knobs: DDPKnobs, ranks_per_node: int | None = None,
             hier_chunk_bytes: int = HIER_CHUNK_DEFAULT) -> str:
    """The exact DistributedDataParallel construction (and hook registration) for ``knobs``:
    only the arguments that differ from DDP's defaults."""
    args = ["model"]
    if knobs.bucket_cap_mb != DDP_DEFAULT.bucket_cap_mb:
        args.append(f"bucket_cap_mb={knobs.bucket_cap_mb:g}")
    if knobs.gradient_as_bucket_view:
        args.append("gradient_as_bucket_view=True")
    if knobs.static_graph:
        args.append("static_graph=True")
    call = f"model = DistributedDataParallel({', '.join(args)})"
    if knobs.comm_hook == "hierarchical":
        call += ("; model.register_comm_hook(collscope.hooks.hierarchical.HierarchicalState"
                 f".create(world_size, ranks_per_node={ranks_per_node or 'R'}, "
                 "device_type=device.type"
                 + (f", chunk_bytes={hier_chunk_bytes}" if hier_chunk_bytes != HIER_CHUNK_DEFAULT
                    else "")
                 + "), collscope.hooks.hierarchical.hierarchical_hook)")
    elif knobs.comm_hook in HOOK_CALLS:
        call += "; " + HOOK_CALLS[knobs.comm_hook]
    return call


def recommendation(rows: Sequence[dict], ranks_per_node: int | None = None,
                   drifted: bool = False, hier_chunk_bytes: int = HIER_CHUNK_DEFAULT) -> str:
    """One line: the fastest configuration as the exact DDP arguments, against the default.

    A winner whose interquartile range overlaps the default's is called out as within noise,
    so nobody retunes a cluster on a coin toss.
    """
    ranked = rank_by_step_time(rows)
    if not ranked:
        return "recommendation: none (nothing was measured)"
    best = ranked[0]
    knobs: DDPKnobs = best["knobs"]
    baseline = next((row for row in rows if row["knobs"] == DDP_DEFAULT), None)
    if knobs == DDP_DEFAULT:
        return ("recommendation: keep DDP's defaults: model = DistributedDataParallel(model) "
                "(no setting tried was faster)")
    line = f"recommendation: {ddp_call(knobs, ranks_per_node, hier_chunk_bytes)}"
    if baseline is None:
        return line + " (fastest measured; the DDP default was not in this run)"
    gain = speedup(baseline["step_time_ms"], best["step_time_ms"]) or 1.0
    line += f"  # {gain:.2f}x the DDP default's step rate"
    if best.get("step_time_ms_p75", best["step_time_ms"]) >= \
            baseline.get("step_time_ms_p25", baseline["step_time_ms"]):
        line += " (within the default's step-to-step spread: confirm with more --steps)"
    elif drifted:
        line += " (the machine's speed drifted during the sweep: confirm on a quiet machine)"
    return line
