"""Typical bands, tail runs and extrapolation marks, on real fixture logs."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from collscope.cli import main
from collscope.model.costmodel import Group
from collscope.model.fit import Sample
from collscope.model.spread import spread_at, tail_runs, typical_spread
from collscope.records.load import load_input
from tests.conftest import fixture_path

MI325X = "mi325x_1to8node_allreduce_rccl_egrep_filtered.txt"
REPEATS = (1.0, 1.006, 0.996, 1.003)      # four repeats agreeing within 1 %


def _log(name: str) -> str:
    return str(fixture_path("nccl-tests-logs", name))


def _repeated_runs(path: Path, slow: dict[tuple[int, int], float]) -> Path:
    """The MI325X log's 1-, 2- and 4-node runs, each as four repeats (REPEATS) in bench's
    JSON Lines; repeat k of N nodes is slow[(N, k)] times slower."""
    lines = []
    for run in load_input(_log(MI325X)).runs:
        nodes = run.context["nodes"]
        if nodes == 8:
            continue
        for k, factor in enumerate(REPEATS):
            lines.append({"kind": "run", "command": "bench", "backend": "rccl",
                          "world_size": nodes * 8, "nodes": nodes, "ranks_per_node": 8})
            for result in run.results:
                lines.append({**result.to_dict(),
                              "time_us": result.time_us * factor * slow.get((nodes, k), 1.0)})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _predict(capsys: pytest.CaptureFixture[str], model: Path, *argv: str,
             ) -> tuple[str, list[dict[str, object]]]:
    assert main(["model", "predict", str(model), "--collective", "all_reduce",
                 "--ranks-per-node", "8", *argv, "--json", str(model) + ".jsonl"]) == 0
    records = [json.loads(line) for line in Path(str(model) + ".jsonl").read_text().splitlines()]
    return capsys.readouterr().out, records


def test_one_slow_run_is_a_tail_not_a_wide_band(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 22's case: fitted on 1, 2 and 4 nodes, four repeats within 1 %, one 4-node
    repeat 2x slower. Before: the 8-node 1 GiB band was 0.70x-1.97x of its estimate (this
    data) and the row said in-range; now the slow run is named as a tail, the band is the
    repeats' spread, and the row says how far it extrapolates."""
    case = _repeated_runs(tmp_path / "case.jsonl", {(4, 3): 2.0})
    clean = _repeated_runs(tmp_path / "clean.jsonl", {})
    for source in (case, clean):
        assert main(["model", "fit", str(source), "-o", str(source.with_suffix(".json"))]) == 0
    err = capsys.readouterr().err
    assert ("all_reduce 4x8: 1 of 4 runs at 4 node(s) was 2.0x slower than the runs' "
            "median (case.jsonl #12); left out of the fit and the typical band") in err
    out, (record,) = _predict(capsys, case.with_suffix(".json"), "--nodes", "8", "-b", "1G",
                              "-e", "1G")
    _, (without,) = _predict(capsys, clean.with_suffix(".json"), "--nodes", "8", "-b", "1G",
                             "-e", "1G")
    assert record["time_us"] == pytest.approx(without["time_us"], rel=1e-3)
    assert 0.97 < record["time_us_low"] / record["time_us"] <= 1.0
    assert 1.0 <= record["time_us_high"] / record["time_us"] < 1.03
    assert record["tail_slowdown"] == pytest.approx(2.0, rel=0.01)
    assert record["tail"].startswith("all_reduce 4x8: 1 of 4 runs at 4 node(s) was 2.0x")
    assert (record["nodes_extrapolation"], record["size_extrapolation"]) == (2.0, 4.0)
    assert record["extrapolated"] and record["fitted_nodes"] == [1, 2, 4]
    assert "# tail: all_reduce 4x8: 1 of 4 runs at 4 node(s) was 2.0x slower" in out
    assert out.rstrip().endswith("nodes x2.0 size x4.0")


def test_h100_8_nodes_from_2_and_4_typical_band_holds_the_measured_median(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 22's done-when: fitted on the 2- and 4-node H100 logs, the 8-node band is at
    most +-30 % at >= 256 MiB and holds the measured 8-node median of each size; every row
    carries its node extrapolation (8 of at most 4: x2.0) in the table and the JSON."""
    model = tmp_path / "h100.json"
    assert main(["model", "fit", _log("h100_2node_default_nccl_issue309.txt"),
                 _log("h100_4node_default_nccl_issue309.txt"), "-o", str(model)]) == 0
    capsys.readouterr()
    out, records = _predict(capsys, model, "--nodes", "8", "--sizes", "256M-8G")
    measured: dict[int, list[float]] = {}
    for result in load_input(_log("h100_8node_default_nccl_issue309.txt")).results:
        measured.setdefault(result.size_bytes, []).append(result.time_us)
    assert len(records) == 6
    for r in records:
        time, low, high = (float(r[k]) for k in ("time_us", "time_us_low", "time_us_high"))
        assert 0.7 <= low / time <= 1.0 <= high / time <= 1.3, r
        assert low <= statistics.median(measured[int(r["size_bytes"])]) <= high, r
        assert r["nodes_extrapolation"] == 2.0 and r["size_extrapolation"] == 1.0
    rows = [line.split(None, 11) for line in out.splitlines() if line and line[0] != "#"]
    assert {row[11] for row in rows} == {"nodes x2.0"}
    assert "# fit: nodes x2.0 = 8 node(s) lies 2.0 times outside the node counts fitted " \
           "(2, 4)" in out
    _, inside = _predict(capsys, model, "--nodes", "2,3,4", "--sizes", "1G-1G")
    assert [r["extrapolated"] for r in inside] == [False] * 3


def test_check_counts_the_medians_inside_the_band(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "h100.json"
    assert main(["model", "fit", _log("h100_2node_default_nccl_issue309.txt"),
                 _log("h100_4node_default_nccl_issue309.txt"), "-o", str(model)]) == 0
    capsys.readouterr()
    assert main(["model", "check", str(model),
                 _log("h100_8node_default_nccl_issue309.txt")]) == 0
    out = capsys.readouterr().out
    large = next(line for line in out.splitlines() if ">= 256 MiB" in line)
    assert "6 of 6" in large
    assert out.splitlines()[-1].endswith("6 of 14 sizes (43%)")
    assert main(["model", "check", str(model), _log("h100_8node_default_nccl_issue309.txt"),
                 "--json", "-"]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[0])
    assert (summary["kind"], summary["sizes"], summary["medians_in_band"]) == ("check", 14, 6)


def _rows(runs: dict[str, float]) -> list[Sample]:
    return [Sample(size, size / 1e3 * factor, run=run, placement=placement)
            for run, factor in runs.items() for size in (1 << 20, 1 << 24, 1 << 28)
            for placement in ("in-place", "out-of-place")]


def test_two_runs_that_disagree_mark_neither_and_the_band_covers_both() -> None:
    rows = _rows({"a": 1.0, "b": 2.0})
    assert tail_runs(rows) == []
    low, high, _ = typical_spread(rows)
    assert high - low == pytest.approx(math.log(2.0))


@pytest.mark.parametrize(("factors", "tails"), [
    ({"a": 1.0, "b": 1.01, "c": 1.5}, [("c", 1.49)]),
    ({"a": 1.0, "b": 1.01, "c": 0.5}, []),              # a faster run is no tail
    ({"a": 1.0, "b": 1.01, "c": 1.05}, []),             # 5 %: under the 10 % floor
    ({"a": 1.0, "b": 1.0, "c": 1.0, "d": 3.0, "e": 2.0}, [("d", 3.0), ("e", 2.0)]),
])
def test_tail_runs(factors: dict[str, float], tails: list[tuple[str, float]]) -> None:
    found = tail_runs(_rows(factors))
    assert [(t.run, round(t.slowdown, 2)) for t in found] == tails
    assert all(t.rows == 6 for t in found)


# Congestion as a shared fabric gives it: each of four repeats slower than the fastest by a
# share of AMPLITUDE, the share varying by run and size (CONGESTED_SHARES, one run the
# fastest at each size), so no run is slow throughout (none is a tail run).
CONGESTED_SHARES = ((0, .6, .2, 1), (.5, 0, 1, .3), (1, .4, 0, .7), (.2, 1, .6, 0))


def _amplitude(size: int) -> float:
    """Up to 2x at latency-bound sizes, 20 % in between, 3 % once bandwidth-bound."""
    return 1.0 if size <= 8 << 20 else 0.2 if size <= 64 << 20 else 0.03


def _congested_repeats(path: Path) -> Path:
    lines = []
    for nodes in (2, 4):
        (run,) = load_input(_log(f"h100_{nodes}node_default_nccl_issue309.txt")).runs
        sizes = sorted({r.size_bytes for r in run.results})
        for shares in CONGESTED_SHARES:
            lines.append({"kind": "run", "command": "bench", "backend": "nccl",
                          "world_size": nodes * 8, "nodes": nodes, "ranks_per_node": 8})
            for r in run.results:
                share = shares[sizes.index(r.size_bytes) % len(shares)]
                slower = 1 + _amplitude(r.size_bytes) * share
                lines.append({**r.to_dict(), "time_us": r.time_us * slower})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_large_size_band_is_its_own_sizes_spread_not_the_small_sizes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 26's case, on the real H100 2- and 4-node curves with planted congestion (the
    GH200 logs it was seen on are not among the fixtures): four repeats per layout that
    differ by up to 2x at <= 8 MiB and by <= 3 % at >= 128 MiB. The 8-node 1 GiB band is
    within +-30 % and holds the measured 8-node median; the spread pooled over all sizes
    made it -19.6 %..+37.2 %."""
    case = _congested_repeats(tmp_path / "congested.jsonl")
    model = case.with_suffix(".json")
    assert main(["model", "fit", str(case), "-o", str(model)]) == 0
    assert "was" not in capsys.readouterr().err                  # no tail run
    _, (record,) = _predict(capsys, model, "--nodes", "8", "--sizes", "1G-1G")
    time, low, high = (float(record[k]) for k in ("time_us", "time_us_low", "time_us_high"))
    assert 0.7 <= low / time < 0.95 and 1.05 < high / time <= 1.3, record
    measured = [r.time_us for r in
                load_input(_log("h100_8node_default_nccl_issue309.txt")).results
                if r.size_bytes == 1 << 30]
    assert low <= statistics.median(measured) <= high
    for data in json.loads(model.read_text())["groups"]:
        group = Group.from_dict(data)
        here = group.fit.band_at(1 << 30)
        group.fit.repeat_ratios = []                             # as a version-2 file reads
        pooled = group.fit.band_at(1 << 30)
        assert pooled[1] - pooled[0] > here[1] - here[0] + math.log(1.1)
    assert math.exp(pooled[1]) > 1.3                             # the band that said nothing


def test_the_spread_at_a_size_is_of_the_sizes_near_it() -> None:
    ratios = [(1 << 20, math.log(2.0)), (1 << 20, 0.0), (1 << 30, math.log(1.02)),
              (1 << 30, 0.0), (1 << 31, math.log(0.99))]
    # At 1 GiB: the rows of 256 MiB..4 GiB (1.02, 1.0, 0.99); percentiles interpolated.
    assert spread_at(ratios, 1 << 30, 4) == pytest.approx((0.9 * math.log(0.99),
                                                           0.9 * math.log(1.02)))
    assert spread_at(ratios, 1 << 33, 4) == (math.log(0.99), 0.0)    # 2 GiB is within 4x
    assert spread_at(ratios, 1 << 40, 4) == (math.log(0.99), 0.0)    # none: the nearest
    assert spread_at(ratios, 1 << 19, 4) == pytest.approx((0.0, 0.95 * math.log(2.0)))
    assert spread_at([], 1 << 30, 4) == (0.0, 0.0)
