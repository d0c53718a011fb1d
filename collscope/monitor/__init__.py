"""Live and recorded GPU, memory and network monitoring (``collscope monitor``).

Library use, next to a training loop::

    from collscope.monitor import Sampler

    samples = []
    with Sampler(interval=1.0, sinks=[samples.append]) as sampler:
        train()
    summary = sampler.summary()
    print(summary.metrics["gpu.0.util_percent"].mean, summary.bytes_moved)

Each sample is a ``SampleRecord`` with flat metric names (``cpu.percent``,
``net.<iface>.rx_bytes_per_s``, ``gpu.<i>.util_percent``, ...); see record.py.
"""

from collscope.monitor.sampler import Sampler, default_sources
from collscope.monitor.summary import Summary
from collscope.records.sample import SampleRecord

__all__ = ["Sampler", "SampleRecord", "Summary", "default_sources"]
