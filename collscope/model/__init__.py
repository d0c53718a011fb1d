"""`collscope model`: cost formulas, robust fits of measurements, prediction, step plans."""

from collscope.model.costmodel import CostModel

__all__ = ["CostModel"]
