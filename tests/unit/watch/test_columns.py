"""A host record in columns gives back what its ranks published: every arrival (as the
matcher joins them, by collective), and each rank's summary less its arrivals."""

from __future__ import annotations

from collscope.watch import columns, levels
from collscope.watch.bandwidth import Timed
from collscope.watch.match import Matcher
from collscope.watch.summary import Pending, Summary

BASE_US = 1_796_155_784_988_074


def _summaries() -> list[tuple[int, Summary]]:
    """Three ranks of a host: rank 9 lacks seq 12 of group 0 and is in a sub-group the
    others are not; one has a pending collective, one timed calls."""
    return [
        (8, Summary(41, 1700000000.125, {"0": [(11, BASE_US), (12, BASE_US + 250_000)]},
                    {"0": {"all_reduce": 12}})),
        (9, Summary(41, 1700000000.127, {"0": [(11, BASE_US + 40)], "3": [(5, BASE_US + 7)]},
                    {"0": {"all_reduce": 11}, "3": {"broadcast": 5}},
                    Pending("0", "all_reduce", 12, 2.5))),
        (11, Summary(40, 1700000000.1, {"0": [(11, BASE_US + 31_000), (12, BASE_US + 250_003)]},
                     {"0": {"all_reduce": 12}}, None,
                     {"0": (16, {"all_reduce": Timed(2, 1 << 20, 812.5)})})),
    ]


def test_a_record_gives_back_every_summary_less_its_arrivals():
    published = _summaries()
    record = columns.HostRecord(columns.encode(1700000000.2, 8, 1.0, published))
    assert (record.time, record.leader, record.interval_s, record.ranks) == \
        (1700000000.2, 8, 1.0, [8, 9, 11])
    for rank, summary in published:
        summary.arrivals = {}
        assert record.summary(rank) == summary
    assert record.summary(10) is None


def test_the_matcher_joins_a_record_as_it_joins_each_rank():
    published = _summaries()
    blob = levels.encode_record(1700000000.2, 8, 1.0, [(r, s.encode()) for r, s in published])
    by_rank, by_host = Matcher([8, 9, 11]), Matcher([8, 9, 11])
    for rank, summary in published:
        by_rank.add(rank, summary.arrivals, 1.5, 1)
    by_host.add_host(columns.HostRecord(blob), 1.5, 1)
    assert by_host.members == by_rank.members
    assert by_host._open == by_rank._open
    assert [(m.group, m.seq, m.arrivals_us) for m in by_host.close(1)] == \
        [(m.group, m.seq, m.arrivals_us) for m in by_rank.close(1)]
    # a collective matched already is skipped whole when the next record repeats it
    by_host.add_host(columns.HostRecord(blob), 1.5, 2)
    assert ("0", 11) not in by_host._open


def test_beyond_the_large_job_bound_leaders_merge_every_second_interval():
    assert levels.merge_every(levels.LARGE_JOB_RANKS) == 1
    assert levels.merge_every(levels.LARGE_JOB_RANKS + 1) == levels.LARGE_JOB_EVERY == 2
