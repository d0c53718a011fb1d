"""Byte accounting, busbw factors and table format checked against real nccl-tests logs."""

import re

import pytest

from collscope.bench.output import fixed_width, footer, row
from collscope.collectives.table import COLLECTIVES, bandwidths, bus_factor, canonical_name
from collscope.records.bench import BenchResult
from tests.conftest import fixture_path

ROW = re.compile(r"^\s+\d+\s+\d+\s+\w+\s+\w+\s+-?\d+\s")


@pytest.mark.parametrize("world", [2, 3, 4, 8, 80])
def test_bus_factors_are_nccl_tests(world):
    n = world
    assert bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    for name in ("all_gather", "reduce_scatter", "alltoall"):
        assert bus_factor(name, n) == pytest.approx((n - 1) / n)
    for name in ("broadcast", "reduce", "sendrecv"):
        assert bus_factor(name, n) == 1.0


def test_chunked_sizes_round_like_nccl_tests():
    # h100 10-node log: -b 32M on 80 ranks of doubles prints size 33553920, count 52428.
    assert COLLECTIVES["all_gather"].count_and_size(33554432, 8, 80) == (52428, 33553920)
    assert COLLECTIVES["all_reduce"].count_and_size(33554432, 8, 80) == (4194304, 33554432)


def test_canonical_names():
    assert canonical_name("all_reduce_perf") == "all_reduce"
    assert canonical_name("AllGather") == "all_gather"
    assert canonical_name("gather") is None


def _rows(path, collective_marker=None):
    text = path.read_text()
    blocks = re.split(r"# Collective test starting: (\w+)", text)
    for name, body in zip(blocks[1::2], blocks[2::2], strict=False):
        for line in body.splitlines():
            if ROW.match(line):
                yield canonical_name(name), line


def _result(collective, size, count, dtype, op, root, time_us, algbw, busbw, wrong, in_place):
    return BenchResult(collective=collective, size_bytes=size, count=count, dtype=dtype, op=op,
                       root=root, in_place=in_place, world_size=80, iters=20, time_us=time_us,
                       time_us_p50=None, time_us_p95=None, time_us_min=None, time_us_max=None,
                       algbw_gbs=algbw, busbw_gbs=busbw, wrong=wrong)


def test_rows_and_bandwidths_match_h100_80_rank_log():
    path = fixture_path("nccl-tests-logs", "h100_10node_80gpu_5collectives_nccl.txt")
    checked = 0
    for collective, line in _rows(path):
        f = line.split()
        size, count, root = int(f[0]), int(f[1]), int(f[4])
        placements = []
        for base, in_place in ((5, False), (9, True)):
            time_us, algbw, busbw = float(f[base]), float(f[base + 1]), float(f[base + 2])
            wrong = None if f[base + 3] == "N/A" else int(f[base + 3])
            placements.append(_result(collective, size, count, f[2], f[3], root, time_us,
                                      algbw, busbw, wrong, in_place))
            # Recompute from size and the printed time: equal to the printed precision,
            # allowing for the time's own rounding in the last printed digit.
            ours_alg, ours_bus = bandwidths(size, time_us, collective, 80)
            time_digits = len(f[base].split(".")[1]) if "." in f[base] else 0
            rel_time_rounding = 0.5 * 10 ** -time_digits / time_us
            assert ours_alg == pytest.approx(algbw, abs=0.005 + algbw * rel_time_rounding)
            assert ours_bus == pytest.approx(busbw, abs=0.005 + busbw * rel_time_rounding)
        # Our row formatter prints the same characters as nccl-tests 2.17.
        assert row(*placements) == line.rstrip()
        checked += 1
    assert checked == 50  # 5 collectives x 10 sizes


def test_fixed_width_matches_nccl_tests_choices():
    assert fixed_width(798.52, 7) == " 798.52"
    assert fixed_width(12586.1, 7) == "12586.1"
    assert fixed_width(105854, 7) == " 105854"
    assert fixed_width(1128428, 7) == "1128428"
    assert fixed_width(0.004, 6) == "  0.00"
    assert fixed_width(315.26, 6) == "315.26"
    assert fixed_width(12345678, 7) == "1.2e+07"


def test_footer_reports_failures_and_average():
    ok = _result("all_reduce", 8, 2, "float", "sum", -1, 1.0, 1.0, 2.0, 0, True)
    bad = _result("all_reduce", 8, 2, "float", "sum", -1, 1.0, 1.0, 4.0, 5, True)
    assert footer([ok, ok])[0] == "# Out of bounds values : 0 OK"
    assert footer([ok, bad])[:2] == ["# Out of bounds values : 5 FAILED",
                                     "# Avg bus bandwidth    : 3 "]


def test_missing_placement_keeps_nccl_tests_field_count():
    """all_reduce has no out-of-place form in torch.distributed: its columns read N/A, so a
    script splitting rows on whitespace finds in-place busbw at field 11 as in nccl-tests."""
    in_place = _result("all_reduce", 1024, 256, "float", "sum", -1, 12.5, 0.08, 0.16, 0, True)
    line = row(None, in_place)
    fields = line.split()
    assert len(fields) == 13
    assert fields[5:9] == ["N/A"] * 4
    assert fields[9:] == ["12.50", "0.08", "0.16", "0"]
    both = row(in_place, in_place)
    assert len(line) == len(both)          # the in-place columns stay where nccl-tests has them
    assert line.rindex("12.50") == both.rindex("12.50")
