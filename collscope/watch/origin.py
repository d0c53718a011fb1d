"""Where a delay starts (pure): the flagged ranks of every group turned into stragglers, each
an origin with the ranks and groups it delays, the same root-cause idea `collscope hang`
applies to a cascade.

In sub-group layouts a late rank holds up its group (a tensor-parallel group, say); its peers
wait there, then enter their next collective (the data-parallel one) late together, and are
flagged there. So a flagged rank f *waits on* a member o of a group H they share when, in H,
f was on time (not flagged, its own load below half of o's) and o held H up (o's load there is
at least half of f's largest load where f is flagged). A load is every delay of the rank over
the group's window per second (collscope.watch.detect.judge), the same measure on both
sides. A flagged rank that waits on nobody is an origin; the others are its followers (named
in its finding, not as stragglers); a rank that waits on a rank not flagged yet is left out
until that rank is decided.

A slow pair: an origin on time in one of its groups (no member flagged there, its load there
below half of its own largest) is late because that group's collective is slow (their link), and
so are the group's other members: once all of them are flagged origins they are one
straggler, ``pair`` (``group`` for more ranks), the ranks and that group, not two
stragglers; until then none of them is named.
Point-to-point calls (a pipeline's send/recv) are not in the agents' summaries, so a stage
downstream of a slow rank can only be told by timing: a pair or group origin that shares no
group with a rank origin at the same time is taken as following it (a slow link at the same
time as a slow rank elsewhere is told apart from such a stage by nothing the collectives
carry), one that shares none with a pair or group origin of about its cost (within
DOWNSTREAM_RATIO) as following that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

WAIT_RATIO = 0.5
DOWNSTREAM_RATIO = 0.35


@dataclass
class GroupVerdict:
    """One rank's numbers in one group's window (collscope.watch.detect.judge decides them;
    this module reads them)."""

    group: str
    rank: int
    members: int
    hits: int                 # its late collectives in the span tested
    late_total: int           # K: every member's late collectives in that span
    window: int               # collectives since its run began
    span_s: float             # since its current run of late collectives began
    cost_ms: float            # its counted delays of that run summed
    theta_ms: float
    p: float
    delay_ms: float           # median of its counted delays in that run
    since_us: float           # the run's first late collective
    late_share: float         # late collectives / collectives since then

    @property
    def cost_ms_per_s(self) -> float:
        return self.cost_ms / self.span_s

    @property
    def share(self) -> float:
        return self.cost_ms_per_s / 1000


@dataclass
class Straggler:
    kind: str                       # rank | pair | group
    ranks: list[int]
    verdict: GroupVerdict           # the deciding test: the strongest of its ranks' groups
    groups: list[str]               # where it or its followers are flagged
    followers: list[int] = field(default_factory=list)
    link: str | None = None         # pair / group: the group between its ranks
    cost_ms_per_s: float = 0.0      # the largest of its ranks' costs where they are flagged


def explain(flags: dict[tuple[str, int], GroupVerdict], costs: dict[str, dict[int, float]],
            members: dict[str, set[int]]) -> list[Straggler]:
    by_rank: dict[int, list[GroupVerdict]] = {}
    for (_, rank), verdict in sorted(flags.items()):
        by_rank.setdefault(rank, []).append(verdict)
    groups_of = {r: sorted(g for g, m in members.items() if r in m) for r in by_rank}
    # loads (every delay over the window, per s) on both sides of each comparison
    best = {r: max(costs.get(v.group, {}).get(r, 0.0) for v in vs) for r, vs in by_rank.items()}

    def waits_on(f: int) -> int | None:
        found = []
        for h in groups_of[f]:
            if (h, f) in flags:
                continue
            rates = costs.get(h, {})
            for o, rate in rates.items():
                if o != f and rate >= WAIT_RATIO * best[f] and \
                        rates.get(f, 0.0) < WAIT_RATIO * rate:
                    found.append((rate, o))
        return max(found)[1] if found else None

    def root(f: int) -> int | None:
        """The origin f's wait leads to (None: a loop, or a rank not flagged yet)."""
        seen, at = {f}, f
        while (nxt := waits_on(at)) is not None:
            if nxt in seen or nxt not in by_rank:
                return None
            seen.add(nxt)
            at = nxt
        return at

    roots = {f: root(f) for f in by_rank}
    origins = sorted(r for r, root in roots.items() if root == r)
    followers = {o: sorted(f for f, root in roots.items() if root == o and f != o)
                 for o in origins}

    def strongest(ranks: list[int]) -> GroupVerdict:
        return min((v for r in ranks for v in by_rank[r]), key=lambda v: (v.p, -v.cost_ms))

    def flagged_groups(ranks: list[int]) -> list[str]:
        return sorted({v.group for r in ranks for v in by_rank[r]})

    out: list[Straggler] = []
    merged: set[int] = set()
    origin_set = set(origins)
    world = _world(members)
    for o in origins:
        if o in merged:
            continue
        link = next((g for g in sorted(groups_of[o], key=lambda g: (len(members[g]), g))
                     if 2 <= len(members[g]) < world
                     and not any((g, m) in flags for m in members[g])
                     and costs.get(g, {}).get(o, 0.0) < WAIT_RATIO * best[o]), None)
        ranks = sorted(members[link]) if link is not None else [o]
        flagged = [r for r in ranks if r in by_rank]
        kind = "rank" if link is None else ("pair" if len(ranks) == 2 else "group")
        if link is not None and not members[link] <= origin_set:
            kind = "pending"   # on time in its group, whose other members are not flagged yet
        merged.update(flagged)
        trail = sorted({f for r in flagged for f in followers.get(r, [])} - set(ranks))
        out.append(Straggler(kind, ranks, strongest(flagged), flagged_groups(flagged + trail),
                             trail, link,
                             max(v.cost_ms_per_s for r in flagged for v in by_rank[r])))
    # a pending group may already be downstream of a straggler; it is never said on its own
    return [s for s in downstream(out, members) if s.kind != "pending"]


def _share_a_group(a: list[int], b: list[int], members: dict[str, set[int]]) -> bool:
    return any(m & set(a) and m & set(b) for m in members.values() if len(m) < _world(members))


def _world(members: dict[str, set[int]]) -> int:
    return len(set().union(*members.values())) if members else 0


def downstream(found: list[Straggler], members: dict[str, set[int]]) -> list[Straggler]:
    """Pair and group stragglers that share no group with a rank straggler, or with a pair or
    group of at least 1 / (1 + DOWNSTREAM_RATIO) of their cost (a rank first, then the
    costliest), are taken as its followers through point-to-point calls: a delay passed down a
    pipeline is not made larger on the way, except where slow ranks' delays add up there (two
    in one pipeline, or a rank's once-per-step delay reaching a stage that also waits for it
    on the way back), so a rank straggler leads at any cost. A pending group (its ranks not
    all flagged yet) may be attached too."""
    leads = sorted(found, key=lambda s: (s.kind != "rank", -s.cost_ms_per_s))
    kept: list[Straggler] = []
    for s in leads:
        lead = None if s.kind == "rank" else next(
            (k for k in kept if (k.kind == "rank" or
                                 s.cost_ms_per_s <= (1 + DOWNSTREAM_RATIO) * k.cost_ms_per_s)
             and not _share_a_group(k.ranks, s.ranks, members)), None)
        if lead is None:
            kept.append(s)
            continue
        lead.followers = sorted(set(lead.followers) | set(s.ranks) | set(s.followers))
        lead.groups = sorted(set(lead.groups) | set(s.groups))
    return sorted(kept, key=lambda s: s.ranks)
