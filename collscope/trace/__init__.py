"""`collscope trace`: a job's own torch.profiler traces against the cluster's measured curve."""

from collscope.trace.config import TraceConfig

__all__ = ["TraceConfig"]
