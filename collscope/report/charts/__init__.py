"""What the report draws, independent of how: chart specs built from inputs, and axis math.

The HTML report renders these specs as inline SVG (``svg.py``) and ``--png`` renders the very
same specs with matplotlib (``plots.py``), so both always show the same data. Everything here is
pure: inputs in, specs out. One module per record kind (collectives and predictions, train and
tune, monitor, links, hang, watch), the spec types and names in ``spec``, the axis math in ``axes``.
"""

from collscope.report.charts.axes import (
    axis,
    contrast_ratio,
    format_bytes_tick,
    format_number,
    heat_color,
    heat_key,
    heat_range,
    label_step,
    linear_ticks,
    log_ticks,
    past_limit,
    text_color_on,
    tick_label,
)
from collscope.report.charts.collectives import (
    collective_views,
    prediction_charts,
    prediction_headline,
)
from collscope.report.charts.hang import hang_headline, hang_heat_maps
from collscope.report.charts.links import link_heat_maps, links_headline
from collscope.report.charts.monitor import (
    decimate,
    metric_family,
    monitor_charts,
    monitor_headline,
    unit_label,
)
from collscope.report.charts.spec import (
    HEAT_BAD,
    HEAT_BEST,
    HEAT_GOOD,
    HEAT_PAST,
    PALETTE,
    BarChart,
    Chart,
    CollectiveView,
    ColorBook,
    Headline,
    HeatMap,
    LegendEntry,
    LineChart,
    Series,
    TrainView,
    as_number,
    placement_name,
    slug,
)
from collscope.report.charts.train import (
    TRAIN_COLUMNS,
    config_text,
    train_views,
    tune_charts,
    tune_headline,
)
from collscope.report.charts.watch import watch_charts, watch_headline

__all__ = ["HEAT_BAD", "HEAT_BEST", "HEAT_GOOD", "HEAT_PAST", "PALETTE", "TRAIN_COLUMNS",
           "BarChart", "Chart", "CollectiveView", "ColorBook", "Headline", "HeatMap",
           "LegendEntry", "LineChart", "Series", "TrainView", "as_number", "axis",
           "collective_views", "config_text", "contrast_ratio", "decimate", "format_bytes_tick",
           "format_number", "hang_headline", "hang_heat_maps", "heat_color", "heat_key",
           "heat_range", "label_step", "linear_ticks",
           "link_heat_maps", "links_headline", "log_ticks", "metric_family", "monitor_charts",
           "monitor_headline", "past_limit", "placement_name", "prediction_charts",
           "prediction_headline", "slug", "text_color_on", "tick_label", "train_views",
           "tune_charts", "tune_headline", "unit_label", "watch_charts", "watch_headline"]
