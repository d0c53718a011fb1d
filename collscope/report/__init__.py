"""Reports over collscope records: result store, nccl-tests log import, compare, plots, HTML."""

from collscope.report.html import render_report

__all__ = ["render_report"]
