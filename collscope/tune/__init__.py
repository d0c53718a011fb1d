"""`collscope tune`: which RCCL/NCCL settings make this cluster's collectives fastest?

``space`` (variables, values, baseline, presets) -> ``plan`` (grid or coordinate descent, in
interleaved rounds) -> ``run`` / ``trials`` (one fresh bench job per trial, under a timeout)
-> ``analysis`` (per-size speed-up intervals, winners) -> ``handover`` (export lines, NCCL
tuner-plugin CSV, tune records) and ``report`` (what is printed).
"""

from collscope.tune.config import TuneConfig

__all__ = ["TuneConfig"]
