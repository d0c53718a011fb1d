"""torch's own analyser beside collscope on the same dumps (benchmarks/hang_vs_fr_trace.py
runs every case): where fr_trace analyses, collscope names the same or a narrower correct set;
where fr_trace crashes or refuses, collscope analyses."""

from __future__ import annotations

from benchmarks.hang_vs_fr_trace import FIXTURE_TRUTH, compare
from tests.conftest import fixture_path


def test_on_the_nccl_job_fr_trace_names_ten_ranks_in_25_blocks_collscope_the_two_right_ones():
    case = compare("nvrx", fixture_path("flight-recorder", "nvrx_gpu_error_2nd"),
                   FIXTURE_TRUTH["nvrx_gpu_error_2nd"])
    assert case.fr.status == "analysed"
    assert case.fr.named == {0, 1, 2, 3, 4, 5, 6, 7, 9, 14} and case.fr.blocks == 25
    assert case.collscope == [9, 14] and case.judgement == "narrower, correct"


def test_on_a_gloo_job_fr_trace_crashes_and_collscope_analyses():
    case = compare("skip", fixture_path("flight-recorder", "gloo_skip_4ranks"),
                   FIXTURE_TRUTH["gloo_skip_4ranks"])
    assert case.fr.status == "crashed" and "KeyError" in case.fr.why
    assert case.collscope == [2] and case.holds
