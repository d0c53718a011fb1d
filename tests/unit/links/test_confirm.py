"""Confirmation of failing links (pure): the rounds run again, and how tries combine."""

from __future__ import annotations

import itertools

import pytest

from collscope.links.config import LinksConfig
from collscope.links.confirm import Confirmation, failing_directions, merge_tries, rounds_to_confirm
from collscope.links.run import link_records
from collscope.links.verdicts import NodeInfo, failed, judge

DEVICES = [{"rank": r, "node": r, "host": f"n{r}", "device": None, "device_type": "cpu",
            "local_rank": 0} for r in range(4)]
INFO = [{"nic": None, "matrix": None}] * 4
NODES = [NodeInfo(node=r, host=f"n{r}", ranks=[r], nics=[]) for r in range(4)]
MIB = 1 << 20
ROUND = {(0, 3): 0, (1, 2): 0, (0, 2): 1, (1, 3): 1, (0, 1): 2, (2, 3): 2}   # a tournament


def _measured(seconds) -> list[dict]:
    """Every direction of 4 nodes; ``seconds(src, dst)`` is each iteration's time."""
    return [{"scope": "inter", "round": ROUND[tuple(sorted((a, b)))], "src": a, "dst": b,
             "size": MIB, "times": [seconds(a, b)] * 3, "latency": 1e-5, "stop": "all"}
            for a, b in itertools.permutations(range(4), 2)]


def _judged(measured, fixed=()):
    links = link_records(measured, DEVICES, INFO)
    nodes, thresholds = judge(links, NODES, fixed=fixed)
    return links, nodes, thresholds


def test_a_noisy_direction_cleared_by_its_retry_passes_and_keeps_both_tries():
    measured = _measured(lambda a, b: 4e-3 if (a, b) == (1, 3) else 1e-3)
    links, nodes, thresholds = _judged(measured)
    assert failing_directions(links) == {("inter", 1, 3)}
    assert rounds_to_confirm(links) == [("inter", 1)]          # the round that held it
    again = [m | {"times": [1.1e-3] * 3} for m in measured if m["round"] == 1]
    assert merge_tries(measured, again, failing_directions(links)) == 1
    links, nodes, _ = _judged(measured, fixed=thresholds)
    assert not failed(links, nodes)
    (retried,) = [x for x in links if (x.src_rank, x.dst_rank) == (1, 3)]
    assert retried.tries_gbs == pytest.approx([MIB / 4e-3 / 1e9, MIB / 1.1e-3 / 1e9])
    assert retried.gbs == pytest.approx(MIB / 1.1e-3 / 1e9)   # its best try
    others = [x for x in links if (x.src_rank, x.dst_rank) != (1, 3)]
    assert all(len(x.tries_gbs) == 1 for x in others)         # passed: measured once


def test_a_slow_node_stays_slow_and_passing_links_ignore_the_rerun():
    measured = _measured(lambda a, b: 4e-3 if 2 in (a, b) else 1e-3)
    links, nodes, thresholds = _judged(measured)
    assert [n.host for n in nodes if n.verdict == "slow"] == ["n2"]
    assert rounds_to_confirm(links) == [("inter", 0), ("inter", 1), ("inter", 2)]
    # Every link is faster in the re-run; only the failing (node 2's) ones take their try.
    again = [m | {"times": [t * 0.9 for t in m["times"]]} for m in measured]
    assert merge_tries(measured, again, failing_directions(links)) == 6
    links, nodes, after = _judged(measured, fixed=thresholds)
    assert after == thresholds                                 # fixed by the first pass
    assert [n.host for n in nodes if n.verdict == "slow"] == ["n2"]
    assert all(len(x.tries_gbs) == (2 if 2 in (x.src_rank, x.dst_rank) else 1) for x in links)


def test_the_best_try_is_kept_when_a_retry_is_slower():
    measured = _measured(lambda a, b: 4e-3 if (a, b) == (0, 1) else 1e-3)
    links, _, _ = _judged(measured)
    merge_tries(measured, [m | {"times": [8e-3] * 3} for m in measured if m["round"] == 2],
                failing_directions(links))
    (entry,) = [m for m in measured if (m["src"], m["dst"]) == (0, 1)]
    assert entry["times"] == [4e-3] * 3 and len(entry["tries"]) == 2


def test_confirmation_text_counts_cleared_and_failed_again():
    text = Confirmation(attempt=1, rounds=3, failing_before=6, failing_after=6).text()
    assert "6 failing direction(s) re-measured in 3 round(s)" in text
    assert "0 cleared, 6 failed again" in text


def test_confirm_must_not_be_negative():
    from collscope.errors import UsageError
    with pytest.raises(UsageError, match="confirm"):
        LinksConfig(confirm=-1)
