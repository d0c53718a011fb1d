"""What `collscope links` prints: the cross-node matrix keeps every --per-gpu link."""

from __future__ import annotations

import msgspec

from collscope.links.config import LinksConfig
from collscope.links.report import render
from collscope.links.run import Outcome, Phase
from collscope.records.links import LinkRecord, NodeRecord


def _link(src: int, dst: int, gbs: float, verdict: str = "ok") -> LinkRecord:
    # Two hosts x two ranks: ranks 0, 1 on h0, ranks 2, 3 on h1.
    return LinkRecord(src_host=f"h{src // 2}", dst_host=f"h{dst // 2}", src_rank=src,
                      dst_rank=dst, src_device=f"cuda:{src % 2}", dst_device=f"cuda:{dst % 2}",
                      src_nic=None, dst_nic=None, scope="inter", link_type=None,
                      size_bytes=1 << 26, iters=5, time_us=(1 << 26) / gbs / 1e3, gbs=gbs,
                      expected_gbs=None, verdict=verdict, src_node=src // 2, dst_node=dst // 2)


def _outcome() -> Outcome:
    links = [_link(0, 2, 11.0), _link(2, 0, 12.0), _link(1, 3, 2.5, "slow"), _link(3, 1, 13.0)]
    nodes = [NodeRecord(host=f"h{n}", node=n, ranks=[2 * n, 2 * n + 1], nics=[], median_gbs=11.0,
                        best_gbs=13.0, links=4) for n in range(2)]
    return Outcome(links, nodes, [], [Phase("inter", [[(0, 2), (1, 3)]])], 1.0)


def _matrix_rows(text: str) -> dict[str, list[str]]:
    """The cross-node matrix's Markdown rows: first cell -> the others."""
    block = text.split("GB/s across nodes")[1].split("nodes\n")[0]
    rows = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 1 and not set(cells[0]) <= {"-", ":"}:
            rows[cells[0]] = cells[1:]
    return rows


def test_per_gpu_links_get_a_cell_each_labelled_by_host_and_local_rank(capsys):
    render(_outcome(), LinksConfig(per_gpu=True))
    rows = _matrix_rows(capsys.readouterr().out)
    assert rows["src \\ dst"] == ["h0/0", "h0/1", "h1/0", "h1/1"]
    assert rows["h0/0"] == ["-", "-", "11", "-"]
    assert rows["h0/1"] == ["-", "-", "-", "2.5 slow"]          # the slow GPU pair survives
    assert rows["h1/0"] == ["12", "-", "-", "-"]
    assert rows["h1/1"] == ["-", "13", "-", "-"]


def test_one_rank_per_node_labels_cells_by_host(capsys):
    outcome = _outcome()
    outcome.links = outcome.links[:2]
    render(outcome, LinksConfig())
    rows = _matrix_rows(capsys.readouterr().out)
    assert rows["src \\ dst"] == ["h0", "h1"]
    assert rows["h0"] == ["-", "11"] and rows["h1"] == ["12", "-"]


def test_a_slow_gpu_and_a_confirmation_are_named(capsys):
    import itertools

    from collscope.links.confirm import Confirmation
    from collscope.links.verdicts import NodeInfo, judge

    links = [msgspec.structs.replace(_link(a, b, 5.0 if 2 in (a, b) else 40.0), scope="intra",
                                 src_host="h0", dst_host="h0", src_node=0, dst_node=0,
                                 src_device=f"cuda:{a}", dst_device=f"cuda:{b}")
             for a, b in itertools.permutations(range(4), 2)]
    nodes, thresholds = judge(links, [NodeInfo(0, "h0", [0, 1, 2, 3], [])])
    render(Outcome(links, nodes, thresholds, [Phase("intra", [])], 1.0,
                   confirmations=[Confirmation(1, 3, 6, 6)]), LinksConfig())
    out = capsys.readouterr().out
    assert "SLOW GPU h0 rank 2 (cuda:2): inside the node, every link it sends and receives " \
           "is below the threshold (best 5 GB/s)" in out
    assert "confirmation 1: 6 failing direction(s) re-measured in 3 round(s)" in out
    assert "verdict: FAIL (0 slow node(s), 1 slow GPU(s), 0 failing link(s) beyond them)" in out


def test_links_cut_short_and_the_confirmation_sizes_are_said(capsys):
    from collscope.links.confirm import Confirmation

    outcome = _outcome()
    outcome.links[2].iters = 1                            # its pair spent its budget
    outcome.confirmations = [Confirmation(1, 1, 1, 1, [1 << 19, 1 << 20])]
    render(outcome, LinksConfig(pair_budget_s=2.5))
    out = capsys.readouterr().out
    assert "1 direction(s) judged on fewer than 5 timed iterations (--pair-budget 2.5 s" in out
    assert "re-measured in 1 round(s) run again at 512 KiB, 1 MiB; 0 cleared" in out
