"""Rates from cumulative counters: the pure core behind every bytes/s figure monitor shows.

A counter that goes backwards was reset (driver reload, interface re-created) or wrapped; the
true delta is unknowable, so that interval gets no rate at all rather than a garbage one, and
counting resumes from the new value.
"""

from __future__ import annotations

from collections.abc import Mapping

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
