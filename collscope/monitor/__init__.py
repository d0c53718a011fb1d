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

from collscope.monitor import wrap
from collscope.monitor.prometheus import (
    PrometheusExporter,
    escape_label,
    format_number,
    parse_listen,
)
from collscope.monitor.sampler import Sampler, default_sources
from collscope.monitor.summary import Summary
from collscope.records.sample import SampleRecord

# wrap (run a command and supervise it) and the Prometheus exporter: watch uses them too.
__all__ = ["PrometheusExporter", "Sampler", "SampleRecord", "Summary", "default_sources",
           "escape_label", "format_number", "parse_listen", "wrap"]
