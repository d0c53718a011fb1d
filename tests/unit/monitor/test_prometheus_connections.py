"""The --prometheus exporter under clients that misbehave: idle and half-open connections never
block a scrape or shutdown; NaN and infinities are written as the exposition format spells them."""

from __future__ import annotations

import socket
import time
import urllib.request

import pytest

from collscope.monitor.prometheus import PrometheusExporter, render
from collscope.records.sample import SampleRecord

SAMPLE = SampleRecord(ts=1.0, host="node0", metrics={"cpu.percent": 12.5})


def _scrape(url: str) -> tuple[float, bytes]:
    start = time.monotonic()
    with urllib.request.urlopen(url, timeout=1.0) as response:
        body = response.read()
    return time.monotonic() - start, body


@pytest.mark.serial   # bounds a wall time
def test_scrape_succeeds_within_a_second_while_other_connections_sit_idle():
    exporter = PrometheusExporter("127.0.0.1", 0).start()
    idle = socket.create_connection(exporter.address, timeout=5)          # sends nothing
    half = socket.create_connection(exporter.address, timeout=5)
    half.sendall(b"GET /metr")                                            # half a request line
    try:
        exporter(SAMPLE)
        for _ in range(3):
            took, body = _scrape(exporter.url)
            assert took < 1.0 and b"collscope_cpu_percent" in body
        start = time.monotonic()
        exporter.close()
        # Not held by them: an idle client that blocked the server would cost its 5 s
        # connection timeout; serve_forever's 0.5 s poll plus a loaded host stays well below.
        assert time.monotonic() - start < 2.5
    finally:
        idle.close()
        half.close()
        exporter.close()


def test_non_finite_values_are_written_as_prometheus_spells_them():
    text = render(SampleRecord(ts=1.0, host="h", metrics={
        "cpu.percent": float("nan"), "mem.used_bytes": float("inf"),
        "mem.total_bytes": float("-inf")}))
    assert 'collscope_cpu_percent{host="h"} NaN' in text
    assert 'collscope_memory_used_bytes{host="h"} +Inf' in text
    assert 'collscope_memory_total_bytes{host="h"} -Inf' in text
