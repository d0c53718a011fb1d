"""`collscope overlap`: does a collective hide under compute on this machine?

Modules: ``config`` (its flags, validated, no torch), ``run`` (the measurement, its text).

The micro view behind `collscope train`'s overlap figure. A matmul and an all_reduce run alone
and together (the collective launched with async_op=True, the matmul issued while it is in
flight: on GPUs the matmul runs on its own CUDA stream and the collective on the
communicator's; on CPU the collective runs in gloo's threads while the matmul runs on the
caller's). Overlap efficiency = (t_compute + t_comm - t_both) / min(t_compute, t_comm): 1 when
the shorter of the two hides completely under the longer, 0 when they serialise, below 0 when
running them together is slower than one after the other (they compete for cores or links).

Importing this module does not import torch (the CLI validates the config before spawning).
"""

from collscope.overlap.config import OverlapConfig, OverlapOutputs

__all__ = ["OverlapConfig", "OverlapOutputs"]
