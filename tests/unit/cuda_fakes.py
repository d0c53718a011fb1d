"""A fake CUDA/HIP device shaped exactly like the torch.cuda API collscope uses.

``torch.cuda.Event(enable_timing=True)`` with ``record(stream=None)``, ``query()``,
``synchronize()`` and ``elapsed_time(end) -> milliseconds``; ``torch.cuda._sleep(cycles)``;
``torch.cuda.mem_get_info(device) -> (free, total)``; ``synchronize``, ``device_count``,
``is_available``, ``set_device``, ``get_device_name``. Behind them, one in-order stream on a
simulated clock: every host call costs host time, work reaches the device a submission
latency later, and ``time.sleep`` wakes up late (as an OS scheduler does). Tests of GPU code
paths run on CPU against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

US = 1e-6


@dataclass
class FakeGpu:
    clock_hz: float = 1.5e9
    submit_latency_s: float = 3 * US       # host call -> the device sees the work
    launch_cost_s: float = 8 * US          # host time of launching one collective
    record_cost_s: float = 1 * US
    wake_latency_s: float = 60 * US        # time.sleep(x) returns x + this later
    free_bytes: int = 40 * 1024**3
    total_bytes: int = 80 * 1024**3
    host: float = 0.0                      # host clock (s)
    device_free_at: float = 0.0            # when the stream finishes what is queued (s)
    sleeps: list[float] = field(default_factory=list)

    def submit(self, host_cost: float, device_duration: float) -> float:
        """Queue work; returns when it completes on the device."""
        self.host += host_cost
        start = max(self.device_free_at, self.host + self.submit_latency_s)
        self.device_free_at = start + device_duration
        return self.device_free_at

    def launch(self, duration_s: float) -> None:
        """A collective of ``duration_s`` device time."""
        self.submit(self.launch_cost_s, duration_s)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.host += seconds + self.wake_latency_s

    def event_class(self) -> type:
        gpu = self

        class Event:
            def __init__(self, enable_timing: bool = False, blocking: bool = False,
                         interprocess: bool = False) -> None:
                self.enable_timing = enable_timing
                self.stamp: float | None = None

            def record(self, stream: Any = None) -> None:
                self.stamp = gpu.submit(gpu.record_cost_s, 0.0)

            def query(self) -> bool:
                gpu.host += 0.5 * US
                return self.stamp is None or gpu.host >= self.stamp

            def synchronize(self) -> None:
                if self.stamp is not None:
                    gpu.host = max(gpu.host, self.stamp) + 2 * US

            def wait(self, stream: Any = None) -> None:
                pass

            def elapsed_time(self, end_event: Event) -> float:
                if not (self.enable_timing and end_event.enable_timing):
                    raise RuntimeError("Both events must be created with argument "
                                       "'enable_timing=True'.")
                if self.stamp is None or end_event.stamp is None:
                    raise RuntimeError("Both events must be recorded before calculating "
                                       "elapsed time.")
                if gpu.host < end_event.stamp:
                    raise RuntimeError("Both events must be completed before calculating "
                                       "elapsed time.")
                return (end_event.stamp - self.stamp) * 1e3

        return Event

    def install(self, monkeypatch: Any, devices: int = 1) -> None:
        """Replace torch.cuda's entry points (and time.sleep) with this fake."""
        import time

        import torch

        monkeypatch.setattr(torch.cuda, "Event", self.event_class())
        monkeypatch.setattr(torch.cuda, "_sleep",
                            lambda cycles: self.submit(2 * US, cycles / self.clock_hz))
        monkeypatch.setattr(torch.cuda, "synchronize",
                            lambda device=None: setattr(self, "host",
                                                        max(self.host, self.device_free_at)))
        monkeypatch.setattr(torch.cuda, "mem_get_info",
                            lambda device=None: (self.free_bytes, self.total_bytes))
        monkeypatch.setattr(torch.cuda, "is_available", lambda: devices > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: devices)
        monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Fake GPU")
        monkeypatch.setattr(time, "sleep", self.sleep)
