"""The heat-map chart kind: colours against the decision's threshold (else by the bad end of
the range), readable text on every cell, labels that never overlap, same cells in SVG and
PNG."""

from __future__ import annotations

import re

import pytest

from collscope.report.charts import (
    HEAT_BAD,
    HEAT_BEST,
    HEAT_GOOD,
    HeatMap,
    contrast_ratio,
    heat_color,
    heat_range,
    past_limit,
    text_color_on,
)
from collscope.report.svg import heat_map, render


def _matrix(bad: str = "low") -> HeatMap:
    return HeatMap(id="links", title="Pairwise bandwidth", row_label="src", col_label="dst",
                   rows=["n0", "n1", "n2"], cols=["n0", "n1", "n2"],
                   values=[[None, 10.0, 10.0], [10.0, None, 2.5], [10.0, 2.5, None]],
                   unit="GB/s", bad=bad)


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


def test_bad_end_is_red_and_good_end_light() -> None:
    chart = _matrix("low")
    assert heat_range(chart) == (2.5, 10.0)
    assert heat_color(chart, 2.5) == _hex(HEAT_BAD)
    assert heat_color(chart, 10.0) == _hex(HEAT_GOOD)
    waits = _matrix("high")
    assert heat_color(waits, 10.0) == _hex(HEAT_BAD)
    assert heat_color(waits, 2.5) == _hex(HEAT_GOOD)


def test_svg_draws_one_cell_per_measured_value_with_its_tooltip() -> None:
    svg = render(_matrix())
    assert svg == heat_map(_matrix())
    cells = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"[^>]*><title>([^<]*)</title>', svg)
    assert len(cells) == 6                       # the diagonal is not measured
    slow = [fill for fill, tip in cells if tip.endswith(": 2.5 GB/s")]
    assert slow == [_hex(HEAT_BAD)] * 2
    assert "src n1, dst n2: 2.5 GB/s" in svg


def test_png_renders_the_same_spec(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from collscope.report.plots import write_pngs

    (path,) = write_pngs([_matrix()], tmp_path)
    assert path.name == "links.png" and path.stat().st_size > 1000


def test_empty_heat_map_says_so() -> None:
    empty = HeatMap(id="e", title="t", row_label="r", col_label="c", rows=[], cols=[],
                    values=[], unit="ms")
    assert heat_range(empty) == (0.0, 0.0)
    assert "no data to draw" in render(empty)


def _reds(fill: str) -> bool:
    red, green, blue = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
    return red > green + 40 and red > blue + 40


def test_with_a_threshold_healthy_cells_stay_blue_and_only_those_past_it_are_red() -> None:
    # links' verdict: slow below 1.064 GB/s; a healthy 1.12 GB/s link is not alarming even
    # though it is the slowest healthy one, and the 0.3 GB/s link is the darkest red.
    chart = HeatMap(id="l", title="t", row_label="src", col_label="dst", rows=["a", "b"],
                    cols=["a", "b", "c"], values=[[None, 1.12, 1.5], [0.3, None, 1.0]],
                    unit="GB/s", bad="low", limit=1.064)
    fills = {v: heat_color(chart, v) for v in (1.12, 1.5, 1.0, 0.3)}
    assert not _reds(fills[1.12]) and not _reds(fills[1.5])
    assert fills[1.5] == _hex(HEAT_BEST) and heat_color(chart, 1.064) == _hex(HEAT_GOOD)
    assert _reds(fills[1.0]) and fills[0.3] == _hex(HEAT_BAD)
    assert past_limit(chart, 1.0) and not past_limit(chart, 1.064)
    assert "red: below the threshold 1.06 GB/s" in heat_map(chart)
    waits = HeatMap(id="w", title="t", row_label="rank", col_label="call", rows=["r0"],
                    cols=["0", "1"], values=[[0.5, 9.0]], unit="ms", bad="high", limit=1.0)
    assert not _reds(heat_color(waits, 0.5)) and heat_color(waits, 9.0) == _hex(HEAT_BAD)


@pytest.mark.parametrize("share", [i / 20 for i in range(21)])
def test_cell_text_contrasts_at_least_4_5_to_1_on_every_colour(share: float) -> None:
    chart = HeatMap(id="l", title="t", row_label="src", col_label="dst", rows=["a"],
                    cols=["a", "b"], values=[[0.0, 1.0]], unit="GB/s")
    fill = heat_color(chart, share)
    assert contrast_ratio(text_color_on(fill), fill) >= 4.5
    svg = heat_map(chart)
    for rect_fill, text_fill in re.findall(
            r'fill="(#[0-9a-f]{6})"[^>]*><title>[^<]*</title></rect>\s*<text class="value"'
            r'[^>]*fill="(#[0-9a-f]{6})"', svg):
        assert contrast_ratio(rect_fill, text_fill) >= 4.5


@pytest.mark.parametrize(("count", "step"), [(1, 1), (12, 1), (30, 2), (120, 10), (530, 50)])
def test_column_labels_are_thinned_to_round_steps_that_do_not_touch(count: int,
                                                                    step: int) -> None:
    calls = [str(i) for i in range(count)]
    chart = HeatMap(id="late", title="t", row_label="rank", col_label="matched call",
                    rows=["rank 0", "rank 1"], cols=calls, values=[[1.0] * count] * 2,
                    unit="ms", bad="high")
    labels = re.findall(r'<text class="tick" x="([\d.]+)" y="[\d.]+" text-anchor="middle">'
                        r"(\d+)</text>", heat_map(chart))
    assert [int(text) for _, text in labels] == list(range(0, count, step))
    xs = [float(x) for x, _ in labels]
    widest = max(len(c) for c in calls) * 6.6
    assert all(b - a > widest for a, b in zip(xs, xs[1:]))
