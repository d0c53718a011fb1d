"""Pair schedules (pure): which pairs exchange in which round.

A round holds disjoint pairs, so every pair of a round runs at once on its own links and a
round costs one pair's exchange time. The round-robin tournament (circle method) meets every
pair exactly once: N-1 rounds for even N, N rounds for odd N (one member sits out each
round), so 1000 nodes cost 999 rounds, not 10^6 pair runs.
"""

from __future__ import annotations

import random

from collscope.errors import UsageError

Pair = tuple[int, int]


def round_robin(n: int) -> list[list[Pair]]:
    """Every pair of 0..n-1 exactly once, in rounds where nobody appears twice."""
    if n < 2:
        return []
    players: list[int | None] = list(range(n)) + ([None] if n % 2 else [])
    size = len(players)
    rounds = []
    for _ in range(size - 1):
        pairs = []
        for i in range(size // 2):
            a, b = players[i], players[size - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(sorted(pairs))
        # Circle method: player 0 stays, the others rotate one place.
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def random_pairs(n: int, partners: int, seed: int = 0) -> list[list[Pair]]:
    """Each member draws ``partners`` distinct random partners; the union of those pairs,
    packed greedily into rounds of disjoint pairs (for jobs too large for every pair)."""
    if n < 2:
        return []
    if not 1 <= partners < n:
        raise UsageError(f"--pairs: random:{partners} needs 1 <= K < {n} (the number of nodes)")
    rng = random.Random(seed)
    edges: set[Pair] = set()
    for member in range(n):
        others = [m for m in range(n) if m != member]
        for other in rng.sample(others, partners):
            edges.add((min(member, other), max(member, other)))
    return pack_rounds(sorted(edges))


def pack_rounds(pairs: list[Pair]) -> list[list[Pair]]:
    """Greedy: each round takes every remaining pair whose members are still free."""
    remaining = list(pairs)
    rounds = []
    while remaining:
        busy: set[int] = set()
        chosen, left = [], []
        for a, b in remaining:
            if a in busy or b in busy:
                left.append((a, b))
            else:
                chosen.append((a, b))
                busy.update((a, b))
        rounds.append(chosen)
        remaining = left
    return rounds


def parse_pairs(text: str, label: str = "--pairs") -> int | None:
    """"all" -> None (tournament), "random:K" -> K; UsageError naming ``label`` otherwise."""
    value = text.strip().lower()
    if value == "all":
        return None
    if value.startswith("random:") and value[7:].isdigit() and int(value[7:]) > 0:
        return int(value[7:])
    raise UsageError(f"{label}: '{text}' is not accepted; use all or random:K (K >= 1 random "
                     "partners per node)")
