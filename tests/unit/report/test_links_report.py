"""collscope report draws links' link records as GB/s heat maps (low = bad)."""

from __future__ import annotations

import json

from collscope.records.links import LinkRecord, LinksSummaryRecord, NodeRecord
from collscope.records.load import parse_input
from collscope.report.charts import link_heat_maps, links_headline
from collscope.report.html import all_charts, render_report


def _link(src: int, dst: int, gbs: float, scope: str = "inter") -> dict:
    return LinkRecord(src_host=f"h{src}" if scope == "inter" else "h0",
                      dst_host=f"h{dst}" if scope == "inter" else "h0", src_rank=src,
                      dst_rank=dst, src_device="cpu", dst_device="cpu", src_nic=None,
                      dst_nic=None, scope=scope, link_type=None, size_bytes=1 << 20, iters=3,
                      time_us=(1 << 20) / gbs / 1e3, gbs=gbs, expected_gbs=None,
                      verdict="node" if 2 in (src, dst) else "ok").to_dict()


def _text() -> str:
    records = [{"kind": "run", "command": "links", "extra": {"thresholds": [
        {"scope": "across nodes", "limit_gbs": 7.0}]}}]
    records += [_link(a, b, 2.5 if 2 in (a, b) else 10.0)
                for a in range(3) for b in range(3) if a != b]
    records += [_link(0, 1, 4.0, "intra"), _link(1, 0, 4.5, "intra")]
    records += [NodeRecord(host=f"h{n}", node=n, ranks=[n], nics=[], median_gbs=1.0,
                           best_gbs=1.0, links=4, verdict="slow" if n == 2 else "ok",
                           slow_ranks=[1] if n == 0 else []).to_dict()
                for n in range(3)]
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_link_records_become_one_matrix_across_nodes_and_one_per_node():
    source = parse_input(_text(), "links.jsonl")
    assert len(source.runs[0].links) == 11 and not source.warnings
    across, inside = link_heat_maps([source])
    assert across.rows == across.cols == ["h0", "h1", "h2"] and across.bad == "low"
    assert across.values[0] == [None, 10.0, 2.5] and across.values[2][1] == 2.5
    assert across.limit == 7.0 and "across nodes: slow below 7 GB/s" in across.note
    assert inside.title.endswith("inside h0 (GB/s)") and inside.values == [[None, 4.0],
                                                                           [4.5, None]]
    assert inside.row_label == "src rank" and inside.limit is None   # no threshold given
    # The verdict is said first, above the maps: the slow node and GPU, the links that fail.
    headline = links_headline(source.runs[0])
    assert headline is not None and headline.level == "fail"
    assert headline.text == ("links.jsonl: FAIL: slow node(s): h2; slow GPU(s): h0 rank(s) 1; "
                             "4 of 8 link directions below threshold")
    assert headline.details == ["across nodes: slow below 7 GB/s"]
    page = render_report([source], generated_at=0)
    assert 'id="links"' in page and "src host h2, dst host h1: 2.5 GB/s" in page
    assert page.index(headline.text) < page.index("<svg")
    assert [c.id for c in all_charts([source])] == [across.id, inside.id]


def test_the_summary_record_gives_the_thresholds_and_raw_tries_are_not_warned_about():
    text = _text().replace('"extra": {"thresholds": [{"scope": "across nodes", '
                           '"limit_gbs": 7.0}]}', '"extra": {}')
    text += json.dumps({"kind": "link_try", "scope": "inter", "round": 0, "attempt": 0}) + "\n"
    text += json.dumps(LinksSummaryRecord(
        verdict="fail", slow_nodes=[], thresholds=[{"scope": "across nodes", "limit_gbs": 6.5}],
        confirmations=[], rounds={"inter": 1}, seconds=1.0).to_dict()) + "\n"
    source = parse_input(text, "links.jsonl")
    assert not source.warnings
    across, _inside = link_heat_maps([source])
    assert across.limit == 6.5 and "slow below 6.5 GB/s" in across.note
    assert '"extra": {}' in text
