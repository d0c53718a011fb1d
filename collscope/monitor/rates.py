"""Rates from cumulative counters: the pure core behind every bytes/s figure monitor shows
(and the CPU busy share, a ratio of two counters' deltas).

A counter that goes backwards was reset (driver reload, interface re-created) or wrapped; the
true delta is unknowable, so that interval gets no rate at all rather than a garbage one, and
counting resumes from the new value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RATE_SUFFIX = "_per_s"


def rate(previous: float, current: float, seconds: float) -> float | None:
    """(current - previous) / seconds, or None when the counter went backwards or no time
    passed."""
    if seconds <= 0 or current < previous:
        return None
    return (current - previous) / seconds


class RateTracker:
    """Remembers each counter's last value and time; turns the next values into rates.

    ``totals`` accumulates the valid deltas per counter (bytes moved since the first reading),
    which stays right across resets because a reset interval adds nothing.
    """

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, float]] = {}
        self.totals: dict[str, float] = {}

    def update(self, counters: Mapping[str, float], now: float) -> dict[str, float]:
        """Rates named ``<counter>_per_s`` for every counter seen before; first sightings only
        set the baseline."""
        rates: dict[str, float] = {}
        for name, value in counters.items():
            previous = self._last.get(name)
            self._last[name] = (value, now)
            if previous is None:
                continue
            per_second = rate(previous[0], value, now - previous[1])
            if per_second is None:
                continue
            rates[name + RATE_SUFFIX] = per_second
            self.totals[name] = self.totals.get(name, 0) + (value - previous[0])
        return rates


def cpu_busy_percent(previous: Any, current: Any) -> float | None:
    """Busy share in % of all cores between two ``psutil.cpu_times()`` readings, or None when
    no CPU time passed between them.

    The arithmetic of psutil's own ``cpu_percent`` (which keeps its previous reading per thread,
    so it cannot be primed in one thread and read in another): per-field deltas, a field that
    went backwards counts 0; total = every field, minus guest and guest_nice (Linux already
    counts them in user and nice); busy = total - idle - iowait (iowait is an idle CPU).
    """
    deltas = {name: max(0.0, getattr(current, name) - getattr(previous, name))
              for name in current._fields}
    total = sum(deltas.values()) - deltas.get("guest", 0.0) - deltas.get("guest_nice", 0.0)
    if total <= 0:
        return None
    busy = total - deltas["idle"] - deltas.get("iowait", 0.0)
    return 100.0 * max(0.0, busy) / total
