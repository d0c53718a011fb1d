"""Interval unions, intersections and differences: hand cases and a grid cross-check."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from collscope.trace import intervals as iv


def test_hand_cases():
    assert iv.union([(5, 7), (0, 2), (1, 3), (3, 4), (9, 9)]) == [(0, 4), (5, 7)]
    assert iv.intersection([(0, 4), (5, 7)], [(3, 6)]) == [(3, 4), (5, 6)]
    assert iv.difference([(0, 10), (20, 30)], [(2, 3), (5, 25)]) == [(0, 2), (3, 5), (25, 30)]
    assert iv.clip([(0, 4), (5, 7)], 3, 6) == [(3, 4), (5, 6)]
    assert iv.total([(0, 4), (5, 7)]) == 6


pairs = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)).map(sorted).map(tuple),
                 max_size=8)


@given(pairs, pairs)
def test_against_a_unit_grid(a, b):
    """Integer intervals: every measure equals the count of covered unit cells."""
    def cells(intervals):
        return {t for s, e in intervals for t in range(s, e)}

    ua, ub = iv.union(a), iv.union(b)
    assert iv.total(ua) == len(cells(a))
    assert iv.total(iv.intersection(ua, ub)) == len(cells(a) & cells(b))
    assert iv.total(iv.difference(ua, ub)) == len(cells(a) - cells(b))
