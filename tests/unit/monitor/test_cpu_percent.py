"""cpu.percent: the busy share between two readings, right from the first sample (finding 5).

psutil's ``cpu_percent(None)`` keeps its previous reading per thread: primed in the main thread
(baseline) and read in the sampler thread, the first sample read 0.0 and pulled the summary's
mean down. HostSource now keeps its own ``cpu_times()`` reading.
"""

from __future__ import annotations

import threading
from collections import namedtuple

import psutil
import pytest

from collscope.monitor import Sampler
from collscope.monitor.rates import cpu_busy_percent
from collscope.monitor.sources import HostSource

# The shape of psutil.cpu_times() on Linux (psutil 7: scputimes with these fields, in seconds).
scputimes = namedtuple("scputimes", "user nice system idle iowait irq softirq steal guest "
                                    "guest_nice")


def times(user=0.0, idle=0.0, iowait=0.0, guest=0.0, system=0.0):
    return scputimes(user=user, nice=0.0, system=system, idle=idle, iowait=iowait, irq=0.0,
                     softirq=0.0, steal=0.0, guest=guest, guest_nice=0.0)


@pytest.mark.parametrize("before, after, expected", [
    (times(), times(user=3, idle=1), 75.0),
    (times(), times(user=1, system=1, idle=2), 50.0),
    (times(), times(idle=4), 0.0),                            # idle: a real 0
    (times(), times(user=1, iowait=1, idle=2), 25.0),         # iowait is an idle CPU
    (times(), times(user=2, guest=1, idle=2), 50.0),          # guest is already inside user
    (times(user=5, iowait=3), times(user=6, iowait=2, idle=1), 50.0),  # iowait went back: 0
    (times(user=5, idle=5), times(user=5, idle=5), None),     # no CPU time passed: no share
])
def test_cpu_busy_percent(before, after, expected):
    assert cpu_busy_percent(before, after) == expected


class FakeCpuTimes:
    """psutil.cpu_times() that advances only when the test says so."""

    def __init__(self) -> None:
        self.now = times(user=100.0, idle=100.0)

    def advance(self, busy: float, idle: float) -> None:
        self.now = self.now._replace(user=self.now.user + busy, idle=self.now.idle + idle)

    def __call__(self, percpu: bool = False):
        assert not percpu
        return self.now


def in_another_thread(function):
    result = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join(5)
    return result[0]


def test_first_sample_taken_in_the_sampler_thread_is_the_intervals_share(monkeypatch):
    fake = FakeCpuTimes()
    monkeypatch.setattr(psutil, "cpu_times", fake)
    clock = iter([0.0, 0.0, 1.0, 1.0, 2.0, 2.0]).__next__    # one-second intervals
    sampler = Sampler(interval=1, sources=[HostSource()], host="n0", clock=clock)
    sampler.baseline()                      # main thread, as run_monitor does
    fake.advance(busy=3, idle=1)
    first = in_another_thread(sampler.sample_once)   # the sampler thread
    fake.advance(busy=1, idle=1)
    second = in_another_thread(sampler.sample_once)
    assert first.metrics["cpu.percent"] == 75.0
    assert second.metrics["cpu.percent"] == 50.0
    stats = sampler.summary().metrics["cpu.percent"]
    assert (stats.samples, stats.mean, stats.peak, stats.min) == (2, 62.5, 75.0, 50.0)


def test_a_reading_without_a_previous_one_has_no_cpu_percent(monkeypatch):
    fake = FakeCpuTimes()
    monkeypatch.setattr(psutil, "cpu_times", fake)
    source = HostSource()
    first = source.read().gauges
    assert "cpu.percent" not in first and first["mem.total_bytes"] > 0
    assert "cpu.percent" not in source.read().gauges     # no CPU time passed: absent, not 0
    fake.advance(busy=1, idle=3)
    assert source.read().gauges["cpu.percent"] == 25.0


def test_real_first_sample_on_a_busy_cpu_is_not_zero():
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        seen = []
        sampler = Sampler(interval=0.2, sources=[HostSource()], sinks=[seen.append],
                          duration=0.45)
        sampler.baseline()
        sampler.start()
        assert sampler.finished.wait(5)
        sampler.stop()
    finally:
        stop.set()
        spinner.join(5)
    # one busy thread keeps at least one core busy: the first interval's share is well above 0
    assert seen and seen[0].metrics["cpu.percent"] > 5.0, [r.metrics for r in seen]

