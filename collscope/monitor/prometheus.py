"""A Prometheus exporter: the latest sample as gauges, over plain HTTP, from the stdlib.

``render`` (pure) turns a sample into the text exposition format (``# HELP`` / ``# TYPE`` per
metric family, labels escaped, NaN and infinities as ``NaN`` / ``+Inf`` / ``-Inf``);
``PrometheusExporter`` serves it on ``/metrics``: one thread per connection, each with a socket
timeout, so a client that connects and sends nothing (or half a request) neither blocks other
scrapes nor shutdown. Names and labels are stable, e.g.::

    collscope_gpu_utilization_percent{gpu="0",host="node0"} 97
    collscope_net_rx_bytes_per_second{iface="eth0",host="node0"} 1.2e+09
"""

from __future__ import annotations

import math
import re
import socket
import socketserver
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from collscope.errors import UsageError
from collscope.records.sample import SampleRecord, split_metric

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DEFAULT_HOST = "127.0.0.1"
# How long a connection may take to send its request (and read the answer): an idle or
# half-open client is dropped after this, in its own thread, without holding up others.
CONNECTION_TIMEOUT_S = 5.0

# (family, metric) -> (Prometheus name, help). Every one is a gauge: the exporter publishes the
# latest sample; rates are already per second over the sampling interval.
FAMILIES: dict[tuple[str, str], tuple[str, str]] = {
    ("cpu", "percent"): ("collscope_cpu_percent",
                         "Host CPU busy over the last interval, percent of all cores."),
    ("mem", "used_bytes"): ("collscope_memory_used_bytes", "Host memory in use."),
    ("mem", "available_bytes"): ("collscope_memory_available_bytes",
                                 "Host memory available for new allocations."),
    ("mem", "total_bytes"): ("collscope_memory_total_bytes", "Host memory installed."),
    ("net", "rx_bytes_per_s"): ("collscope_net_rx_bytes_per_second",
                                "Bytes received per second on the interface."),
    ("net", "tx_bytes_per_s"): ("collscope_net_tx_bytes_per_second",
                                "Bytes sent per second on the interface."),
    ("net", "rx_drops_per_s"): ("collscope_net_rx_drops_per_second",
                                "Received packets dropped per second on the interface."),
    ("net", "tx_drops_per_s"): ("collscope_net_tx_drops_per_second",
                                "Outgoing packets dropped per second on the interface."),
    ("rdma", "rx_bytes_per_s"): ("collscope_rdma_rx_bytes_per_second",
                                 "Bytes received per second on the RDMA port (port_rcv_data x 4)."),
    ("rdma", "tx_bytes_per_s"): ("collscope_rdma_tx_bytes_per_second",
                                 "Bytes sent per second on the RDMA port (port_xmit_data x 4)."),
    ("rdma", "rx_packets_per_s"): ("collscope_rdma_rx_packets_per_second",
                                   "Packets received per second on the RDMA port."),
    ("rdma", "tx_packets_per_s"): ("collscope_rdma_tx_packets_per_second",
                                   "Packets sent per second on the RDMA port."),
    ("gpu", "util_percent"): ("collscope_gpu_utilization_percent",
                              "GPU compute/graphics engine busy, percent."),
    ("gpu", "mem_util_percent"): ("collscope_gpu_memory_utilization_percent",
                                  "GPU memory controller busy, percent."),
    ("gpu", "mem_used_bytes"): ("collscope_gpu_memory_used_bytes", "GPU memory in use."),
    ("gpu", "mem_total_bytes"): ("collscope_gpu_memory_total_bytes", "GPU memory installed."),
    ("gpu", "power_w"): ("collscope_gpu_power_watts", "GPU power draw."),
    ("gpu", "temperature_c"): ("collscope_gpu_temperature_celsius",
                               "GPU temperature (hotspot/junction where reported)."),
    ("gpu", "pcie_rx_bytes_per_s"): ("collscope_gpu_pcie_rx_bytes_per_second",
                                     "PCIe bytes received by the GPU per second."),
    ("gpu", "pcie_tx_bytes_per_s"): ("collscope_gpu_pcie_tx_bytes_per_second",
                                     "PCIe bytes sent by the GPU per second."),
    ("gpu", "pcie_bytes_per_s"): ("collscope_gpu_pcie_bytes_per_second",
                                  "PCIe bytes per second, both directions together."),
    ("gpu", "xgmi_read_bytes_per_s"): ("collscope_gpu_xgmi_read_bytes_per_second",
                                       "xGMI bytes read per second, all links."),
    ("gpu", "xgmi_write_bytes_per_s"): ("collscope_gpu_xgmi_write_bytes_per_second",
                                        "xGMI bytes written per second, all links."),
    ("gpu", "nvlink_rx_bytes_per_s"): ("collscope_gpu_nvlink_rx_bytes_per_second",
                                       "NVLink bytes received per second, all links."),
    ("gpu", "nvlink_tx_bytes_per_s"): ("collscope_gpu_nvlink_tx_bytes_per_second",
                                       "NVLink bytes sent per second, all links."),
    ("proc", "cpu_seconds_per_s"): ("collscope_process_cpu_seconds_per_second",
                                    "CPU cores busy in the wrapped command's process tree."),
    ("proc", "rss_bytes"): ("collscope_process_resident_memory_bytes",
                            "Resident memory of the wrapped command's process tree."),
    ("proc", "count"): ("collscope_process_count",
                        "Processes in the wrapped command's process tree."),
}
RDMA_HW_FAMILY = ("collscope_rdma_hw_counter_per_second",
                  "Driver hw_counters of the RDMA port, per second (label counter).")
TIMESTAMP_FAMILY = ("collscope_sample_timestamp_seconds",
                    "When the latest sample was taken, seconds since the epoch.")


def prometheus_name(metric_name: str) -> tuple[str, str, dict[str, str]]:
    """Flat metric name -> (Prometheus name, help, labels without host)."""
    parts = split_metric(metric_name)
    labels = dict(parts.labels)
    known = FAMILIES.get((parts.family, parts.metric))
    if known:
        return known[0], known[1], labels
    if parts.family == "rdma" and parts.metric.startswith("hw.") and \
            parts.metric.endswith("_per_s"):
        labels["counter"] = parts.metric[3:].removesuffix("_per_s")
        return RDMA_HW_FAMILY[0], RDMA_HW_FAMILY[1], labels
    generic = re.sub(r"[^a-zA-Z0-9_]", "_", f"collscope_{parts.family}_{parts.metric}")
    return generic, f"collscope metric {parts.family}.{parts.metric}.", labels


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_number(value: float) -> str:
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value) if value != int(value) or abs(value) >= 1e15 else str(int(value))


def render(sample: SampleRecord | None) -> str:
    """The text exposition of one sample (empty before the first sample)."""
    if sample is None:
        return ""
    families: dict[str, tuple[str, list[str]]] = {}
    for name, value in sample.values.items():
        prom, help_text, labels = prometheus_name(name)
        labels["host"] = sample.host
        label_text = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items())
        families.setdefault(prom, (help_text, []))[1].append(
            f"{prom}{{{label_text}}} {format_number(value)}")
    stamp = TIMESTAMP_FAMILY[0]
    families[stamp] = (TIMESTAMP_FAMILY[1],
                       [f'{stamp}{{host="{escape_label(sample.host)}"}} {sample.ts!r}'])
    out: list[str] = []
    for prom in sorted(families):
        help_text, lines = families[prom]
        out.append(f"# HELP {prom} {help_text}")
        out.append(f"# TYPE {prom} gauge")
        out.extend(lines)
    return "\n".join(out) + "\n"


def parse_listen(text: str, flag: str = "--prometheus") -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPv6]:PORT`` -> (host, port); host defaults to loopback."""
    value = text.strip()
    host, port_text = DEFAULT_HOST, value
    if value.startswith("["):
        end = value.find("]")
        if end > 0 and value[end + 1:end + 2] == ":":
            host, port_text = value[1:end], value[end + 2:]
    elif ":" in value:
        host, _, port_text = value.rpartition(":")
        host = host or DEFAULT_HOST
    if not port_text.isdigit() or int(port_text) > 65535:
        raise UsageError(f"{flag}: {text!r} is not [HOST:]PORT; use a port 0-65535 with an "
                         "optional host, e.g. 9400, 0.0.0.0:9400 or [::1]:9400")
    return host, int(port_text)


class PrometheusExporter:
    """Serves the latest sample on ``http://HOST:PORT/metrics``; call it as a sink. Another
    command's metrics are served by giving ``body`` (the exposition text, made per scrape).

    The socket is bound in the constructor, so a port in use fails before anything starts.
    """

    def __init__(self, host: str = DEFAULT_HOST, port: int = 0,
                 body: Callable[[], str] | None = None, name: str = "monitor") -> None:
        self._sample: SampleRecord | None = None
        self._body = body
        self._lock = threading.Lock()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            timeout = CONNECTION_TIMEOUT_S          # applied to the socket in setup()

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body, status, kind = exporter.body().encode(), 200, CONTENT_TYPE
                elif path == "/":
                    body = (f'collscope {name}: metrics at <a href="/metrics">/metrics</a>'
                            '\n').encode()
                    status, kind = 200, "text/html; charset=utf-8"
                else:
                    body, status, kind = b"not found\n", 404, "text/plain; charset=utf-8"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # scrapes every few seconds would flood stderr

        server_class = _server_for(host)
        try:
            self._server = server_class((host, port), Handler)
        except OSError as error:
            raise UsageError(f"--prometheus: cannot listen on {host}:{port}: "
                             f"{error.strerror or error}") from None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics"

    def start(self) -> PrometheusExporter:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={
            "poll_interval": 0.5}, name="collscope-prometheus", daemon=True)
        self._thread.start()
        return self

    def __call__(self, sample: SampleRecord) -> None:
        with self._lock:
            self._sample = sample

    def body(self) -> str:
        if self._body is not None:
            return self._body()
        with self._lock:
            sample = self._sample
        return render(sample)

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()


class _QuietServer(socketserver.ThreadingMixIn, HTTPServer):
    """A threaded HTTPServer without the reverse-DNS lookup (socket.getfqdn) it does when
    binding, which can stall for seconds on nodes without working DNS. Connection threads are
    daemons and not joined on close: an idle client cannot delay shutdown."""

    daemon_threads = True
    block_on_close = False

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class _QuietServer6(_QuietServer):
    address_family = socket.AF_INET6


def _server_for(host: str) -> type[HTTPServer]:
    return _QuietServer6 if ":" in host else _QuietServer
