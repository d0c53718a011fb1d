"""Bounded time per pair (pure): when a pair stops exchanging, and the size a confirmation uses.

Three rules, each a function here, decide how long a pair exchanges in a round:

* **Budget** (``--pair-budget``): the pair's exchanges in one round, warm-ups included, stop
  once the next one would end past the budget, after at least one timed exchange. A pair's
  first exchange is a small probe (1/64 of the size: it sets up the pair's connection, as a
  warm-up does, and gives the pace); the full-size warm-ups run only if they and every timed
  exchange fit at that pace (else the probe was the warm-up). A healthy pair fits (the default
  64 MiB, 1 + 5 times, takes 0.4 s at 1 GB/s, 3.2 s at 1 Gbit/s); a slow one stops after one
  timed exchange.
* **Early decision**: a direction's verdict is its median time over ``n`` timed iterations
  against a limit time L (slow when the median is above L). Once ``n // 2 + 1`` iterations lie
  on one side of L, the median of all ``n`` lies on that side whatever the others measure
  (more than half the values are above L, so both middle values are; likewise below), so the
  verdict is the one the full ``n`` would give, and the median of the iterations taken is on
  the same side too (they hold a strict majority on it). No model of the noise is assumed.
  It applies where L is known and fixed: in the confirmation, against the first
  measurement's threshold.
* **Deciding size**: a confirmation re-measures a failing direction at the smallest size (the
  first size halved, repeatedly) at which the verdict is latency-proof. In the alpha-beta model
  a size-S exchange takes ``alpha + S / B``. The size must make a link at the threshold
  bandwidth-dominated (``S / B_lim >= K alpha``: latency moves its measured rate by at most
  1/K) and keep the failing link's time apart from the threshold's by K latencies
  (``S (1 / B - 1 / B_lim) >= K alpha``), so latency cannot carry it across. ``alpha`` is the
  pair's own small-message exchange time (the least of its control exchanges), K = 10: a
  link back at the healthy median (B_lim / 0.7) then reads at least 93% of it and passes
  (it would need latency to cost 30%); a link just below the limit gets the first size (the
  second condition needs more), and so does one no further below the limit than its own
  iterations spread (range / median), where noise other than latency (the scheduler on a
  shared host) could carry a smaller try across. A pass at a smaller size is not trusted to
  clear a link (a shaper's burst can carry a small message at line rate): see
  confirm.cleared_below_full_size.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

LATENCY_FACTOR = 10          # K above: latency at most 1/K of what separates the verdicts
PROBE_DIVISOR = 64           # the probe moves 1/64 of the size
Decision = str | None        # "slow", "ok", or None (not decided yet)


def probe_bytes(size_bytes: int) -> int:
    """The first exchange of a pair: 1/64 of the size, whole float32 elements."""
    return max(4, size_bytes // PROBE_DIVISOR // 4 * 4)


def decided(times_s: Sequence[float], limit_s: float, iters: int) -> Decision:
    """The verdict of the median of ``iters`` timed iterations against ``limit_s``, once the
    iterations in hand fix it: "slow" (median above the limit), "ok", or None."""
    majority = iters // 2 + 1
    if sum(t > limit_s for t in times_s) >= majority:
        return "slow"
    if sum(t <= limit_s for t in times_s) >= majority:
        return "ok"
    return None


def next_exchange(warmups_done: int, timed_done: int, elapsed_s: float, pace_s: float,
                  warmup_iters: int, iters: int, budget_s: float, settled: bool) -> str | None:
    """What the pair does next: "warmup", "timed", or None (stop). ``elapsed_s`` is the
    pair's time so far in this round and ``pace_s`` the expected time of one full exchange,
    both the larger of its two ends' (so both ends decide alike); ``settled``: every direction
    under test is decided."""
    if timed_done >= iters or settled:
        return None
    if timed_done >= 1 and elapsed_s + pace_s > budget_s:
        return None
    left = warmup_iters - warmups_done
    if left > 0 and elapsed_s + (left + iters - timed_done) * pace_s <= budget_s:
        return "warmup"
    return "timed"


def settled(states: Sequence[int]) -> bool:
    """Both ends' states (0 not under test, 1 under test and undecided, 2 decided): the pair
    is settled when it has a direction under test and every one is decided."""
    return 1 not in states and 2 in states


def deciding_size(size_bytes: int, latency_s: float, link_gbs: float, limit_gbs: float,
                  spread: float = 0.0) -> int:
    """The smallest size (``size_bytes`` halved, whole float32 elements) at which a direction
    measured at ``link_gbs`` is told from ``limit_gbs`` beyond ``latency_s`` (see the module
    note); ``size_bytes`` itself when none smaller does, when the direction is not below the
    limit, when its latency is unknown, or when it is no further below the limit than its own
    iterations spread (``spread``: their range over their median), where noise other than
    latency could carry a smaller try across."""
    if not 0 < link_gbs < limit_gbs or latency_s <= 0 or 1 - link_gbs / limit_gbs <= spread:
        return size_bytes
    limit = limit_gbs * 1e9
    apart = 1 / (1 / (link_gbs * 1e9) - 1 / limit)     # S / apart: the time between verdicts
    need = LATENCY_FACTOR * latency_s * max(limit, apart)
    size = size_bytes
    while size // 2 >= max(4.0, need):
        size //= 2
    return max(4, size - size % 4)


def spread(times_s: Sequence[float]) -> float:
    """The range of a direction's timed iterations over their median (0 for one)."""
    return (max(times_s) - min(times_s)) / statistics.median(times_s) if times_s else 0.0
