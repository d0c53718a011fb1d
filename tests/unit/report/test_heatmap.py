"""The heat-map chart kind: colours by the bad end of the range, same cells in SVG and PNG."""

from __future__ import annotations

import re

import pytest

from collscope.report.charts import HEAT_BAD, HEAT_GOOD, HeatMap, heat_color, heat_range
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
