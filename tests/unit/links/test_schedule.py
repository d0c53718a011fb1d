"""Pair schedules: every pair exactly once, nobody twice in a round, the right round count."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collscope.errors import UsageError
from collscope.links.plan import inter_node_rounds, intra_node_rounds, partner_of, ranks_by_node
from collscope.links.schedule import pack_rounds, parse_pairs, random_pairs, round_robin


def _check_rounds(rounds):
    for pairs in rounds:
        members = [m for pair in pairs for m in pair]
        assert len(members) == len(set(members)), pairs     # no one twice in a round


@given(st.integers(min_value=2, max_value=64))
def test_round_robin_meets_every_pair_once(n):
    rounds = round_robin(n)
    _check_rounds(rounds)
    pairs = [pair for r in rounds for pair in r]
    assert sorted(pairs) == list(itertools.combinations(range(n), 2))
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    for pairs_of_round in rounds:                 # every member busy (one sits out if odd)
        assert len(pairs_of_round) == n // 2


@pytest.mark.parametrize("n,expected", [(0, []), (1, []), (2, [[(0, 1)]]),
                                        (3, [[(1, 2)], [(0, 2)], [(0, 1)]])])
def test_round_robin_small_cases(n, expected):
    assert sorted(map(sorted, round_robin(n))) == sorted(map(sorted, expected))


@given(st.integers(min_value=3, max_value=40), st.integers(min_value=1, max_value=5),
       st.integers(min_value=0, max_value=3))
def test_random_pairs_give_every_node_k_partners_in_disjoint_rounds(n, k, seed):
    k = min(k, n - 1)
    rounds = random_pairs(n, k, seed)
    _check_rounds(rounds)
    pairs = [pair for r in rounds for pair in r]
    assert len(pairs) == len(set(pairs))
    for node in range(n):
        assert sum(node in pair for pair in pairs) >= k
    assert random_pairs(n, k, seed) == rounds               # reproducible by seed


def test_random_pairs_reject_k_not_below_n():
    with pytest.raises(UsageError, match="random:4 needs 1 <= K < 4"):
        random_pairs(4, 4)


def test_pack_rounds_is_greedy_and_disjoint():
    assert pack_rounds([(0, 1), (1, 2), (2, 3), (0, 3)]) == [[(0, 1), (2, 3)], [(1, 2), (0, 3)]]


@pytest.mark.parametrize("text,partners", [("all", None), ("ALL", None), ("random:3", 3)])
def test_parse_pairs(text, partners):
    assert parse_pairs(text) == partners


@pytest.mark.parametrize("text", ["random:0", "random:x", "some", ""])
def test_parse_pairs_rejects(text):
    with pytest.raises(UsageError, match="--pairs"):
        parse_pairs(text)


DEVICES = [{"rank": r, "node": r // 2} for r in range(6)]     # 3 nodes x 2 ranks


def test_rank_pairs_across_and_inside_nodes():
    by_node = ranks_by_node(DEVICES)
    assert by_node == [[0, 1], [2, 3], [4, 5]]
    rounds = round_robin(3)
    leaders = inter_node_rounds(by_node, rounds, per_gpu=False)
    assert sorted(p for r in leaders for p in r) == [(0, 2), (0, 4), (2, 4)]
    every = inter_node_rounds(by_node, rounds, per_gpu=True)
    assert sorted(p for r in every for p in r) == [(0, 2), (0, 4), (1, 3), (1, 5), (2, 4),
                                                  (3, 5)]
    _check_rounds(every)
    assert intra_node_rounds(by_node) == [[(0, 1), (2, 3), (4, 5)]]   # all nodes at once
    assert partner_of([(0, 2), (1, 3)], 3) == 1 and partner_of([(0, 2)], 5) is None
