"""collscope: find and fix the communication bottlenecks of multi-GPU training."""

__version__ = "0.1.0"
