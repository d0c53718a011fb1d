"""The record kinds `collscope watch` writes (JSON Lines, each flushed as it exists).

A `--json FILE` holds, in order: one ``run`` record (collscope.records.run.RunRecord, command
"watch"), then as the job runs ``watch_window`` records (one per rank per aggregation round),
``finding`` records with id ``watch.straggler`` (one when a straggler starts, one when it
ends), ``watch_clock`` records (the hosts' clocks aligned again, every minute, several hosts
only), on a stall ``watch_stall`` followed by `collscope hang`'s own records (its
``hang_group`` records and exactly one ``hang_verdict``; where the job's torch has no Flight
Recorder for its backend, one ``watch_stack_verdict`` instead), and as each rank ends one
``watch_agent`` record: what its agent cost; ``watch_notice`` records (once per rank and
cause) say what limits the watching. Units are in the field names:
``_ms`` milliseconds, ``_s`` seconds; times are seconds since the epoch on the aggregating
rank's clock.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, ClassVar

from collscope.records.base import Record

# Watch's findings (their ids begin so) join a run's watch records, not its trace's.
WATCH_FINDING_PREFIX = "watch."
STRAGGLER_ID = WATCH_FINDING_PREFIX + "straggler"
# How a watch_window's algbw_gbs / busbw_gbs are measured (watch.bandwidth computes them).
BUSBW_METHOD = ("nccl-tests' busbw of the Flight Recorder's durations "
                "(TORCH_NCCL_ENABLE_TIMING=1): sum of sizes (the larger of input and output "
                "bytes) / sum of durations of the collective's calls completed in the rank's "
                "latest interval, x 2(n-1)/n all_reduce, (n-1)/n all_gather, reduce_scatter "
                "and alltoall, 1 broadcast and reduce")


class WatchJobRecord(Record, tag="watch_job"):
    """The job as the aggregating rank found it once every rank's agent said hello, and how
    its hosts' clocks were aligned (``clock``: method, per-host offset and spread in us)."""

    time: float
    world_size: int
    backend: str
    ranks: list[dict[str, Any]]       # rank, host, local_rank, pid
    hosts: list[str]
    clock: dict[str, Any]
    # how the ranks see their collectives (collscope.watch.agent.fr_info): the ring's size
    # variable as this torch reads it (variable, entries, set_by: collscope | user, ignored:
    # names set that this torch does not read), torch, dump (the function read), reads
    # (flight_recorder | main_thread) and why there is no ring for the backend
    flight_recorder: dict[str, Any]
    versions: dict[str, str | None]   # torch, its backends, python (library_versions)

    joins: ClassVar[str | None] = "watch"


class WatchWindowRecord(Record, tag="watch_window"):
    """One rank over the last sliding window of one process group, as the aggregator saw it.

    ``lateness_ms`` is the median over the window's matched collectives of the rank's enqueue
    time minus the first rank's (clocks aligned across hosts); ``arrived_last`` how many of
    them it entered last; ``wait_caused_ms`` the sum over those of what the other ranks waited
    for it (each waiting rank's share summed).

    Bandwidth (``None`` where the rank's Flight Recorder has no durations: gloo always, NCCL and
    RCCL unless TORCH_NCCL_ENABLE_TIMING=1): per collective, over the calls of the group that
    completed with a duration in the rank's latest interval (``timed_calls`` of them),
    ``algbw_gbs`` = sum of their sizes / sum of their durations, in GB/s (1e9 B/s), each size as
    nccl-tests counts it (the larger of input and output bytes); ``busbw_gbs`` = algbw x
    nccl-tests' factor for the collective and ``group_size`` (2(n-1)/n all_reduce, (n-1)/n
    all_gather, reduce_scatter and alltoall, 1 broadcast and reduce). A collective without
    such a call in the interval is absent; none is ever written as 0."""

    time: float
    rank: int
    host: str
    local_rank: int | None
    group: str
    window: int                       # matched collectives in the window
    lateness_ms: float
    arrived_last: int
    wait_caused_ms: float
    collectives_total: dict[str, int]  # per collective type: completed on this rank so far
    oldest_pending_s: float | None    # age of the rank's oldest collective not yet completed
    straggler: bool
    group_size: int | None = None     # members, from the Flight Recorder (set with bandwidth)
    timed_calls: dict[str, int] | None = None
    algbw_gbs: dict[str, float] | None = None
    busbw_gbs: dict[str, float] | None = None

    joins: ClassVar[str | None] = "watch"


class ClockRecord(Record, tag="watch_clock"):
    """A re-run of the clock exchange (every CLOCK_EVERY_S of the job, numbered ``epoch`` from
    1; the start's is in ``watch_job``): per host, the offset found (us, subtracted from its
    ranks' enqueue times from the next round on), the exchange's spread, and ``change_us``,
    how far the offset moved since the one it replaced (the hosts' drift in between). Not
    ``applied`` when a host's first rank did not answer: the previous offsets are kept."""

    time: float
    epoch: int
    applied: bool
    reason: str
    offsets_us: dict[str, float]
    spread_us: dict[str, float]
    change_us: dict[str, float]
    method: str

    joins: ClassVar[str | None] = "watch"


class StragglerFinding(Record, tag="finding"):
    """A rank (or a pair of ranks) that costs the others time, against its peers in the same
    group at the same time (collscope.watch.detect).

    ``state`` is ``started`` (printed once) or ``ended`` (printed once, or at the end of the
    job). ``shape``: persistent (late from the first collective watch saw), onset (its delays
    rose against its own earlier ones: ``p_rise``), intermittent (late in fewer than 70 % of
    the collectives since it started), pair / group (ranks on time against each other in
    ``link``'s group, late together everywhere else). ``rank`` is the first of ``ranks``;
    ``group`` the group whose test decided, ``groups`` every group it or its ``followers``
    (the ranks that wait on it, then arrive late elsewhere) are flagged in. ``test`` says which
    test decided, with its numbers."""

    state: str                        # started | ended
    time: float
    rank: int
    host: str
    local_rank: int | None
    group: str
    since: float                      # its first late collective in the window
    lateness_ms: float                # median delay of its late collectives
    baseline_ms: float                # its median delay before ``since`` (0: nothing before)
    wait_caused_ms: float             # its late collectives' delays summed over the window
    arrived_last: int                 # its late collectives in the window
    window: int                       # collectives in the window
    p_last: float                     # binomial, Bonferroni-corrected for the group's ranks
    p_rise: float | None              # Mann-Whitney U, since against before (None: no before)
    title: str
    test: str
    shape: str | None = None          # None: written before watch told shapes apart (0.x)
    ranks: list[int] = []
    groups: list[str] = []
    followers: list[int] = []
    link: str | None = None
    layout: str = ""                  # the groups seen with collectives when it was decided
    cost_ms_per_s: float = 0.0        # the others' wait it caused, per second of the window
    cost_pct: float = 0.0             # the same as a share of the job's time, in %
    id: str = STRAGGLER_ID
    level: str = "warn"

    joins: ClassVar[str | None] = "watch"

    @classmethod
    def claims(cls, raw: dict[str, Any]) -> bool:
        return str(raw.get("id", "")).startswith(WATCH_FINDING_PREFIX)


class StallRecord(Record, tag="watch_stall"):
    """A collective pending longer than --hang-after, and what the dump request got back."""

    time: float
    detected_by: int                  # the rank whose pending collective was too old
    group: str
    collective: str
    seq: int
    pending_s: float
    dump_dir: str
    answered: list[int]
    no_answer: list[int] = []

    joins: ClassVar[str | None] = "watch"


class StackVerdictRecord(Record, tag="watch_stack_verdict"):
    """A stall judged from the ranks' main-thread stacks alone (no Flight Recorder for the
    backend: collscope.watch.stacks): ``culprit_ranks`` are the ranks whose main thread was
    not in a collective, or that wrote no stack; ``waiting`` maps each wait ("all_reduce at
    train.py:28 in step") to the ranks in it; ``elsewhere`` each culprit to where it was."""

    time: float
    culprit_ranks: list[int]
    waiting: dict[str, list[int]]
    elsewhere: dict[str, str]         # rank (as text: a JSON key) -> file:line in function
    no_answer: list[int]
    title: str
    method: str


class AgentCostRecord(Record, tag="watch_agent"):
    """What one rank's agent cost, measured by the agent on its own thread as it ended
    (time.thread_time: CPU time of that thread alone). ``setup_cpu_s``: once, at the start
    (joining the others, the clock exchange; on rank 0 also the aggregator's imports).
    ``cpu_s`` over ``wall_s`` seconds after it: every interval's FR read, decode, store calls
    and, on rank 0, the aggregation. ``cpu_share`` = cpu_s / wall_s, the share of one core the
    agent takes while the job runs; the training thread can lose at most that much to it
    (the GIL included), whatever else the host runs."""

    time: float
    rank: int
    host: str
    setup_cpu_s: float
    cpu_s: float
    wall_s: float
    cpu_share: float
    ticks: int                        # intervals the agent ran
    read_cpu_s: float                 # of cpu_s: the Flight Recorder reads (dump + decode)
    interval_s: float                 # the interval at the end (stretched by READ_BUDGET)
    lost_entries: int                 # FR entries the ring overwrote before a read saw them

    joins: ClassVar[str | None] = "watch"


class NoticeRecord(Record, tag="watch_notice"):
    """Something about the watching itself a user should act on, sent once by a rank's
    agent (``about``: ``fr_overflow``, the ring overwrote entries between two reads)."""

    time: float
    rank: int
    about: str
    title: str

    joins: ClassVar[str | None] = "watch"


def cost_line(costs: Sequence[dict[str, Any]]) -> str:
    """e.g. 'agent cost: median 0.05 % of a core per rank (0.5 ms CPU per s, 4 ranks,
    time.thread_time on the agent's thread); most: rank 0 (node0) 0.21 % (the aggregator)'.
    Each record needs a numeric ``cpu_share``; a record read from a file may lack the rest."""
    shares = sorted(c["cpu_share"] for c in costs)
    median = statistics.median(shares)
    most = max(costs, key=lambda c: c["cpu_share"])
    return (f"agent cost: median {median * 100:.2f} % of a core per rank ({median * 1e3:.1f} ms "
            f"CPU per s, {len(costs)} rank(s), time.thread_time on the agent's thread); most: "
            f"rank {most.get('rank', '?')} ({most.get('host', '?')}) "
            f"{most['cpu_share'] * 100:.2f} %" +
            (" (the aggregator)" if most.get("rank") == 0 else ""))
