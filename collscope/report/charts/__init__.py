"""What the report draws, independent of how: chart specs built from inputs, and axis math.

The HTML report renders these specs as inline SVG (``svg.py``) and ``--png`` renders the very
same specs with matplotlib (``plots.py``), so both always show the same data. Everything here is
pure: inputs in, specs out. One module per record kind (collectives and predictions, train and
tune, monitor, links, hang), the spec types and names in ``spec``, the axis math in ``axes``.
"""

from collscope.report.charts.axes import (
    axis,
    format_bytes_tick,
    format_number,
    heat_color,
    heat_range,
    linear_ticks,
    log_ticks,
    tick_label,
)
from collscope.report.charts.collectives import collective_views, prediction_charts
from collscope.report.charts.hang import hang_heat_maps
from collscope.report.charts.links import link_heat_maps
from collscope.report.charts.monitor import decimate, metric_family, monitor_charts, unit_label
from collscope.report.charts.spec import (
    HEAT_BAD,
    HEAT_GOOD,
    PALETTE,
    BarChart,
    Chart,
    CollectiveView,
    ColorBook,
    HeatMap,
    LegendEntry,
    LineChart,
    Series,
    TrainView,
    as_number,
    placement_name,
    slug,
)
from collscope.report.charts.train import TRAIN_COLUMNS, config_text, train_views, tune_charts

__all__ = ["HEAT_BAD", "HEAT_GOOD", "PALETTE", "TRAIN_COLUMNS", "BarChart", "Chart",
           "CollectiveView", "ColorBook", "HeatMap", "LegendEntry", "LineChart", "Series",
           "TrainView", "as_number", "axis", "collective_views", "config_text", "decimate",
           "format_bytes_tick", "format_number", "hang_heat_maps", "heat_color", "heat_range",
           "linear_ticks",
           "link_heat_maps", "log_ticks", "metric_family", "monitor_charts", "placement_name",
           "prediction_charts", "slug", "tick_label", "train_views", "tune_charts",
           "unit_label"]
