"""`collscope model`: cost formulas, robust fits of measurements, prediction, step plans."""
