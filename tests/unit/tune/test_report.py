"""What tune prints: the method, per-size cells, failures and the verdict."""

from __future__ import annotations

from collscope.tune.analysis import CI_METHOD, analyse
from collscope.tune.config import TuneConfig
from collscope.tune.report import render
from collscope.tune.space import Library, build_space
from tests.helpers import trials_from


def test_printed_report_names_its_method_and_the_verdict(capsys):
    space = build_space([("NCCL_ALGO", ["Ring", "Tree"])], {}, Library())
    base, ring, tree = space.grid()
    rows = analyse(trials_from({base: [{1024: 100.0}, {1024: 104.0}, {1024: 98.0}],
                                ring: [{1024: 99.0}, {1024: 105.0}, {1024: 97.0}]}), base,
                   min_gain=0.02)
    render(rows, {tree: "hung: no exit within --timeout 60 s, killed"}, space, TuneConfig(),
           "grid, trials via standalone", "", CI_METHOD)
    text = capsys.readouterr().out.rstrip("\n")
    assert "t-interval on the mean log speed-up over paired rounds (scipy.stats.t)" in text
    assert "faster = interval above 1.02" in text
    assert "95% family-wise, each interval at 95% (Bonferroni over the m = configurations x " \
        "sizes comparisons of the sweep: m = 1)" in text
    # the table goes through collscope.console's table console: Markdown off a terminal
    assert "| size  | defaults busbw |" in text and "| 1 KiB |" in text
    assert "NCCL_ALGO unset (the library's default)" in text
    assert "c1: NCCL_ALGO=Ring" in text and "within noise" in text
    assert "failed (never recommended):\n  NCCL_ALGO=Tree: hung" in text
    assert "all_reduce 1 KiB: defaults" in text
    assert text.endswith("verdict: no configuration beats the defaults beyond noise (no interval "
                         "lies wholly above 1.02)")


def test_without_a_measured_baseline_there_is_no_verdict(capsys):
    space = build_space([("NCCL_ALGO", ["Ring"])], {}, Library())
    render([], {space.baseline: "exit code 1 (RuntimeError: boom)"}, space, TuneConfig(), "grid",
           "the baseline (defaults) failed", CI_METHOD)
    text = capsys.readouterr().out.rstrip("\n")
    assert "winners by size range" not in text
    assert text.endswith("verdict: none: the defaults were not measured, so nothing could be "
                         "compared")
