"""The model file, fabric levels, prediction and check, on synthetic groups and real logs."""

from __future__ import annotations

import statistics

import pytest

from collscope.collectives.table import bus_factor
from collscope.model.check import check, size_band
from collscope.model.costmodel import MODEL_VERSION, CostModel, ModelError, build, predict
from collscope.model.data import GroupKey, Measurements, collect
from collscope.model.fit import Sample
from collscope.records.load import load_inputs
from tests.conftest import fixture_path

LOGS = "nccl-tests-logs"
SIZES = [1 << k for k in range(16, 31)]


def groups(*shapes: tuple[int, int, float, float]) -> Measurements:
    """all_reduce groups (nodes, ranks per node, alpha, B) of exact alpha-beta rows."""
    found = Measurements()
    for nodes, per_node, alpha, bw in shapes:
        n = nodes * per_node
        factor = bus_factor("all_reduce", n)
        found.groups[GroupKey("all_reduce", nodes, per_node)] = [
            Sample(s, alpha + s * factor / (bw * 1e3), f"{nodes}x{per_node} {s}") for s in SIZES]
    return found


def test_levels_come_from_the_nearest_group() -> None:
    model = build(groups((1, 8, 20.0, 300.0), (1, 4, 10.0, 320.0), (2, 8, 40.0, 100.0),
                         (4, 8, 80.0, 90.0)))
    intra, inter = model.levels("all_reduce", 16, 8)
    assert intra.key == GroupKey("all_reduce", 1, 8)
    assert inter.key == GroupKey("all_reduce", 4, 8)
    assert model.levels("all_reduce", 2, 4)[1].key.nodes == 2
    assert model.levels("all_reduce", 3, 4)[1].key.nodes == 4    # log2 tie -> the larger


def test_prediction_at_a_measured_shape_is_its_fit() -> None:
    model = build(groups((2, 4, 30.0, 50.0)))
    record = predict(model, "all_reduce", [1 << 30], 2, 4, "ring")[0]
    n = 8
    expected = 30.0 + (1 << 30) * bus_factor("all_reduce", n) / 50e3
    assert record.time_us == pytest.approx(expected, rel=1e-6)
    assert record.busbw_gbs == pytest.approx((1 << 30) / (expected * 1e3) * 1.75, rel=1e-6)
    # Ring latency scales with the steps: 4 nodes x 4 ranks has 30 steps against 14.
    bigger = predict(model, "all_reduce", [1], 4, 4, "ring")[0]
    assert bigger.time_us == pytest.approx(30.0 / 14 * 30, rel=1e-4)


def test_auto_takes_the_fastest_algorithm() -> None:
    model = build(groups((1, 8, 14.0, 1000.0), (2, 8, 300.0, 50.0)))
    small, large = predict(model, "all_reduce", [1 << 10, 1 << 30], 8, 8)
    assert small.algo == "tree"            # latency: log2 steps across nodes
    assert large.algo == "hierarchical"    # bandwidth: less crosses the nodes
    forced = predict(model, "all_reduce", [1 << 30], 8, 8, "ring")[0]
    assert forced.time_us > large.time_us


def test_model_file_round_trip_and_version() -> None:
    model = build(groups((2, 8, 40.0, 100.0)))
    data = model.to_dict()
    again = CostModel.from_dict(data)
    assert again.to_dict() == data
    with pytest.raises(ModelError, match=f"version 99.*reads version {MODEL_VERSION}"):
        CostModel.from_dict({**data, "version": 99}, "old.json")
    with pytest.raises(ModelError, match="not a collscope model file"):
        CostModel.from_dict({"groups": []}, "x.json")


@pytest.mark.parametrize(("collective", "nodes", "per_node", "algo", "message"), [
    ("all_gather", 2, 8, "auto", "not in the model"),
    ("all_reduce", 0, 8, "auto", "must be >= 1"),
    ("all_reduce", 2, 8, "hierarchical", "no single-node group"),
    ("all_reduce", 2, 8, "fastest", "not accepted"),
])
def test_predictions_the_model_cannot_make(collective: str, nodes: int, per_node: int,
                                           algo: str, message: str) -> None:
    model = build(groups((2, 8, 40.0, 100.0)))
    with pytest.raises(ModelError, match=message):
        predict(model, collective, [1024], nodes, per_node, algo)


def test_held_out_nodes_are_not_fitted() -> None:
    model = build(groups((2, 8, 40.0, 100.0), (4, 8, 50.0, 90.0)), held_out_nodes=[4])
    assert [g.key.nodes for g in model.groups] == [2]
    assert model.held_out_nodes == [4]


def _h100(nodes: int) -> str:
    return str(fixture_path(LOGS, f"h100_{nodes}node_default_nccl_issue309.txt"))


def test_h100_fitted_on_2_and_4_nodes_predicts_8_nodes_within_15_percent() -> None:
    """The issue's acceptance check, on nccl-tests#309's logs (8 x H100 per node)."""
    fitted = collect(load_inputs([_h100(2), _h100(4)]))
    assert sorted(fitted.groups) == [GroupKey("all_reduce", 2, 8), GroupKey("all_reduce", 4, 8)]
    model = build(fitted)
    # The 4-node log's inconsistent small-size rows are reported (line 41: 317 us out-of-place
    # against 93.26 us in-place at 1 MiB), not used.
    four = next(g for g in model.groups if g.key.nodes == 4)
    assert {(o.size_bytes, o.time_us) for o in four.fit.outliers} >= {(1048576, 317.0),
                                                                       (1048576, 93.26)}
    assert any("2x8" in line and "1.37x" in line for line in model.diagnostics)
    report = check(model, collect(load_inputs([_h100(8)])))
    large = [r for r in report.rows if r.size_bytes >= 256 << 20]
    assert len(large) == 12                              # 256 MiB .. 8 GiB, both placements
    assert statistics.median(r.error_pct for r in large) < 15.0
    band = next(b for b in report.bands if b.band == ">= 256 MiB")
    assert band.nodes == 8 and not band.in_sample and band.median_error_pct < 15.0
    # 8 GiB out-of-place: measured busbw 320.70 GB/s (line 85 of the log).
    row = next(r for r in large if r.size_bytes == 8589934592 and "out-of-place" in r.source)
    assert row.measured_busbw_gbs == pytest.approx(320.70, rel=1e-3)


def test_h100_4_node_rows_close_to_the_fit_are_not_outliers() -> None:
    """Line 42's out-of-place 2 MiB row (226.8 us) is 6.7 % off the first fit (3.9 % off the
    final one), under the 10 % floor: its neighbours at 1 MiB are wild, it is not."""
    model = build(collect(load_inputs([_h100(4)])))
    outliers = model.groups[0].fit.outliers
    assert (2097152, 226.8) not in {(o.size_bytes, o.time_us) for o in outliers}
    assert {(o.size_bytes, o.time_us) for o in outliers} == {
        (1048576, 317.0), (1048576, 93.26), (2097152, 156.4), (4194304, 174.2),
        (33554432, 455.5)}


def test_8_node_outlier_row_of_the_h100_log_is_found() -> None:
    """8 MiB out-of-place took 1272.4 us where in-place took 321.4 us (line 75)."""
    model = build(collect(load_inputs([_h100(8)])))
    (outlier,) = model.groups[0].fit.outliers
    assert (outlier.size_bytes, outlier.time_us) == (8388608, 1272.4)
    assert outlier.source.endswith("line 75 out-of-place")


def test_mi325x_node_counts_from_the_egrep_separators() -> None:
    path = str(fixture_path(LOGS, "mi325x_1to8node_allreduce_rccl_egrep_filtered.txt"))
    found = collect(load_inputs([path]))
    assert sorted((k.nodes, k.ranks_per_node) for k in found.groups) == \
        [(1, 8), (2, 8), (4, 8), (8, 8)]
    model = build(found, held_out_nodes=[8])
    report = check(model, found)
    eight = next(b for b in report.bands if b.nodes == 8)
    assert not eight.in_sample and eight.median_error_pct < 5.0


@pytest.mark.parametrize(("size", "band"), [(1, "< 1 MiB"), (1 << 20, "1-16 MiB"),
                                            (256 << 20, ">= 256 MiB"), (100 << 20, "16-256 MiB")])
def test_size_bands(size: int, band: str) -> None:
    assert size_band(size) == band
