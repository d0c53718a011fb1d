"""Per-rank timing: each rank's own time inside every timed op, and the late rank it reveals.

Why a separate clock: the timed loop measures iteration boundaries (back-to-back launches), so
in steady state every rank of a synchronous collective sees the same iteration time, whoever
is late. A rank that arrives last at a collective waits least *inside* it, so the late rank
shows in the time from its own launch to the op's completion: consistently the shortest,
while the others' include the wait for it. :class:`OpClock` records that per op (CPU:
perf_counter around the blocking call; GPU: a device event pair around the launch), bounded
to the last ``-n`` ops; the runner wraps the launches in it only with ``--per-rank``, so
other runs add no host work to their timed loops. The bench runner gathers the per-rank
series to rank 0 after each size, outside the timed loop.

Decisions (pure functions, scipy.stats):

* per size, the *late rank* is the rank with the shortest own time in the most iterations;
  it is named when a one-sided binomial test of that count against chance (1/N per
  iteration, Bonferroni-corrected over the N ranks) and a one-sided Wilcoxon signed-rank
  test of its per-iteration wait (the other ranks' median own time minus its own, paired by
  iteration) both give p < alpha (default 0.01);
* the *wait it causes* is the median over iterations of (median of the other ranks' own
  times - the late rank's own time);
* a *finding* names a rank (and its host) when it is the per-size candidate in more than
  half of the sizes and a binomial (sign) test of that count against 1/N per size,
  Bonferroni-corrected over the N ranks (the rank is picked after looking), gives p < alpha
  (and it is significant in at least one size). With S sizes that test's smallest possible
  p is N * (1/N)^S; when that is not below alpha, the footer says there are too few sizes
  to decide rather than that no rank is late.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from collscope.records.finding import FindingRecord

ALPHA = 0.01


class OpClock:
    """Wraps a launch so that each call records this rank's own time inside the op.

    ``delay`` is a planted test fault (collscope.testing.faults ``delay@R:MS``): this rank
    sleeps before each launch, outside its own op time, as a rank late from compute would.
    """

    def __init__(self, device: Any, keep: int, delay: Any = None):
        self.device = device
        self.delay_s = (delay.arg / 1e3) if delay is not None and delay.arg > 0 else 0.0
        self._cpu: deque[float] = deque(maxlen=keep)
        # GPU: ``keep`` event pairs made before the timed loop and reused in turn, so the loop
        # records events but never constructs them (host time stays out of small-op times).
        self._pairs: list[tuple[Any, Any]] = []
        self._recorded = 0
        if device.type == "cuda":
            import torch

            self._pairs = [(torch.cuda.Event(enable_timing=True),
                            torch.cuda.Event(enable_timing=True)) for _ in range(keep)]

    def wrap(self, launch: Callable[[], None]) -> Callable[[], None]:
        if self._pairs:
            pairs = self._pairs

            def timed_gpu() -> None:
                if self.delay_s:
                    time.sleep(self.delay_s)
                start, end = pairs[self._recorded % len(pairs)]
                start.record()
                launch()
                end.record()
                self._recorded += 1
            return timed_gpu

        def timed_cpu() -> None:
            if self.delay_s:
                time.sleep(self.delay_s)
            start = time.perf_counter()
            launch()
            self._cpu.append(time.perf_counter() - start)
        return timed_cpu

    def times(self) -> list[float]:
        """Own op times in seconds, oldest first (call after the loop has synchronised)."""
        if self._pairs:
            count = min(self._recorded, len(self._pairs))
            first = self._recorded - count
            order = [self._pairs[i % len(self._pairs)] for i in range(first, self._recorded)]
            return [start.elapsed_time(end) / 1e3 for start, end in order]
        return list(self._cpu)


def gather_to_root(series: Sequence[Sequence[float]], keep: int, device: Any, rank: int,
                   world_size: int) -> list[list[list[float]]] | None:
    """Gather this rank's series (each at most ``keep`` values, seconds) to rank 0.

    Returns, on rank 0, ``[series][rank] -> values in microseconds``; None elsewhere. One
    fixed-size float64 tensor per rank (NaN-padded), so memory stays bounded by -n.
    """
    import torch
    import torch.distributed as dist

    local = torch.full((len(series), keep), math.nan, dtype=torch.float64)
    for i, values in enumerate(series):
        tail = list(values)[-keep:]
        if tail:
            local[i, :len(tail)] = torch.tensor(tail, dtype=torch.float64)
    local = local.to(device)
    gathered = [torch.empty_like(local) for _ in range(world_size)] if rank == 0 else None
    dist.gather(local, gathered, dst=0)
    if gathered is None:
        return None
    return [[[v * 1e6 for v in gathered[r][i].tolist() if not math.isnan(v)]
             for r in range(world_size)] for i in range(len(series))]


def iteration_max(rank_times_us: Sequence[Sequence[float]]) -> list[float]:
    """Per iteration, the largest time over ranks (nccl-tests' ``times_us`` with -I 1)."""
    length = min((len(t) for t in rank_times_us), default=0)
    return [max(t[i] for t in rank_times_us) for i in range(length)]


@dataclass(frozen=True)
class LateRank:
    rank: int
    wait_us: float          # median over iterations of (others' median own time - its own)
    shortest: int           # iterations in which its own time was the shortest
    iterations: int
    binom_p: float          # Bonferroni-corrected over the ranks
    wilcoxon_p: float       # signed-rank test of its per-iteration waits > 0
    significant: bool


def late_rank(op_us: Sequence[Sequence[float]], alpha: float = ALPHA) -> LateRank | None:
    """The rank that arrives last at one size's ops, from every rank's own op times."""
    from collscope.stats.significance import late_rank_p, signed_rank_p

    ranks = len(op_us)
    iterations = min((len(t) for t in op_us), default=0)
    if ranks < 2 or iterations < 2:
        return None
    shortest = [0] * ranks
    waits: list[list[float]] = [[] for _ in range(ranks)]
    for i in range(iterations):
        column = [op_us[r][i] for r in range(ranks)]
        low = min(range(ranks), key=column.__getitem__)
        shortest[low] += 1
        for r in range(ranks):
            others = column[:r] + column[r + 1:]
            waits[r].append(statistics.median(others) - column[r])
    rank = max(range(ranks), key=lambda r: (shortest[r], statistics.median(waits[r])))
    binom_p = late_rank_p(shortest[rank], iterations, ranks)
    wilcoxon_p = signed_rank_p(waits[rank], "greater")
    return LateRank(rank=rank, wait_us=statistics.median(waits[rank]),
                    shortest=shortest[rank], iterations=iterations, binom_p=float(binom_p),
                    wilcoxon_p=wilcoxon_p,
                    significant=binom_p < alpha and wilcoxon_p < alpha)


# A finding with its evidence in its message; like links/verdicts.py's Threshold by shape
# only (other facts, other wording).
@dataclass(frozen=True)
class LateFinding:
    rank: int
    host: str
    sizes_late: int
    sizes: int
    binom_p: float
    median_wait_us: float

    def message(self) -> str:
        return (f"rank {self.rank} on {self.host} is the late rank in {self.sizes_late} of "
                f"{self.sizes} sizes (binomial sign test vs 1/N per size, Bonferroni over "
                f"the ranks: p={self.binom_p:.2g}); the "
                f"others wait a median {self.median_wait_us:.0f} us per op for it")


def finding(per_size: Sequence[LateRank | None], world_size: int, hosts: Sequence[str],
            alpha: float = ALPHA) -> LateFinding | None:
    """The rank that is each size's late-rank candidate in most sizes beyond chance, or None.

    Under no late rank each size's candidate is any of the N ranks with probability 1/N, so a
    binomial (sign) test of how often one rank is the candidate decides (the same test as
    the per-size one and trace's straggler: stats.significance.late_rank_p); the rank must also
    be the candidate in more than half of the sizes and significant in at least one.
    """
    from collscope.stats.significance import late_rank_p

    judged = [s for s in per_size if s is not None]
    if not judged or world_size < 2:
        return None
    counts: dict[int, list[LateRank]] = {}
    for size in judged:
        counts.setdefault(size.rank, []).append(size)
    rank, sizes = max(counts.items(), key=lambda item: len(item[1]))
    p = late_rank_p(len(sizes), len(judged), world_size)
    if len(sizes) * 2 <= len(judged) or p >= alpha or not any(s.significant for s in sizes):
        return None
    host = hosts[rank] if rank < len(hosts) else "?"
    return LateFinding(rank=rank, host=host, sizes_late=len(sizes), sizes=len(judged),
                       binom_p=p, median_wait_us=statistics.median(s.wait_us for s in sizes))


def finding_line(per_size: Sequence[LateRank | None], world_size: int, hosts: Sequence[str],
                 alpha: float = ALPHA) -> str:
    """The footer's verdict: the finding, or why there is none (too few sizes for the sign
    test to reach ``alpha`` is not evidence that no rank is late)."""
    from collscope.stats.significance import min_late_trials

    found = finding(per_size, world_size, hosts, alpha)
    if found is not None:
        return found.message()
    judged = sum(1 for s in per_size if s is not None)
    if world_size < 2 or judged == 0:
        return "none (no size has a per-rank verdict: needs >= 2 ranks and 2 iterations)"
    need = min_late_trials(world_size, alpha)
    if judged < need:
        return (f"none: too few sizes to decide (need >= {need} for p < {alpha:g} with "
                f"{world_size} ranks, have {judged}; the sign test over sizes cannot reach "
                f"it even if one rank were late in all of them)")
    return "none (no rank is the late rank in most sizes beyond chance)"


def finding_record(per_size: Sequence[LateRank | None], world_size: int,
                   hosts: Sequence[str], alpha: float = ALPHA) -> FindingRecord:
    """The footer's verdict as a ``finding`` record (warn when a rank is named, else info)."""
    found = finding(per_size, world_size, hosts, alpha)
    return FindingRecord(
        id="bench.late-rank", level="warn" if found else "info",
        title=(f"rank {found.rank} on {found.host} is the late rank" if found
               else "no late rank named"),
        detail=finding_line(per_size, world_size, hosts, alpha),
        fix=("look at what that rank does before each launch: a slower host, a noisy "
             "neighbour, CPU binding, or a GPU clocked down" if found else ""),
        at_stake_ms=found.median_wait_us / 1e3 if found else 0.0,
        rank=found.rank if found else None,
        test=f"binomial sign test over sizes vs 1/N (Bonferroni over ranks), p < {alpha:g}")


METHOD = ("late rank = the rank with the shortest own op time (launch to completion) in the "
          "most iterations; named when a binomial test against 1/N (Bonferroni over ranks) "
          f"and a one-sided Wilcoxon signed-rank test of its per-iteration wait both give p < "
          f"{ALPHA:g}; wait = median over iterations of (others' median own time - its own)")


def report_lines(rows: Sequence[tuple[str, int, bool, LateRank | None]],
                 hosts: Sequence[str]) -> list[str]:
    """The --per-rank block: (collective, size, in_place, LateRank) per result, '#' lines."""
    lines = [f"# Per-rank timing: {METHOD}",
             "#  collective        size  placement     late rank  host          wait (us)"
             "  shortest  binom p  Wilcoxon p"]
    for collective, size, in_place, late in rows:
        place = "in-place" if in_place else "out-of-place"
        if late is None:
            lines.append(f"#  {collective:<14s} {size:>9d}  {place:<12s}  "
                         "(needs >= 2 ranks and 2 iterations)")
            continue
        who = f"{late.rank:>9d}" if late.significant else "     none"
        host = (hosts[late.rank] if late.rank < len(hosts) else "?") if late.significant else "-"
        lines.append(f"#  {collective:<14s} {size:>9d}  {place:<12s}  {who}  {host:<12s} "
                     f"{late.wait_us:>9.1f}  {late.shortest:>3d}/{late.iterations:<4d} "
                     f"{late.binom_p:8.2g}  {late.wilcoxon_p:8.2g}")
    return lines
