"""Hand-over: export lines bash can source, the NCCL example tuner plugin's CSV, tune records."""

from __future__ import annotations

import csv
import subprocess
from typing import Any

import pytest

from collscope.tune.analysis import analyse
from collscope.tune.handover import (
    MAX_LINE,
    NO_WINNER,
    TUNER_ALGORITHMS,
    TUNER_COLLECTIVES,
    TUNER_COLUMNS,
    TUNER_PROTOCOLS,
    env_lines,
    recommend,
    tune_records,
)
from collscope.tune.handover import tuner_csv as tuner_lines
from collscope.tune.space import Config
from tests.unit.tune.test_analysis import trials_from


def read_tuner_csv(text: str) -> list[dict[str, Any]]:
    """Rows as NCCL's example tuner plugin reads them (the tests' model of that reader): '#'
    lines and empty lines skipped, 8 to 10 fields (numPipeOps and regBuff default to -1).
    Raises ValueError on a line the plugin would drop."""
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if len(line.encode()) > MAX_LINE:
            raise ValueError(f"line {number}: {len(line.encode())} bytes; the plugin reads "
                             f"{MAX_LINE} per line and takes the rest for another line")
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if not 8 <= len(fields) <= 10:
            raise ValueError(f"line {number}: {len(fields)} fields; the plugin reads 8 to 10")
        fields += ["-1"] * (10 - len(fields))
        row: dict[str, Any] = dict(zip(TUNER_COLUMNS, fields))
        for name in TUNER_COLUMNS[1:3] + TUNER_COLUMNS[5:]:
            row[name] = int(row[name])
        if row["collective_type"] not in TUNER_COLLECTIVES.values():
            raise ValueError(f"line {number}: collective {row['collective_type']!r}")
        if row["algorithm"] not in TUNER_ALGORITHMS.values():
            raise ValueError(f"line {number}: algorithm {row['algorithm']!r}")
        if row["protocol"] not in TUNER_PROTOCOLS.values():
            raise ValueError(f"line {number}: protocol {row['protocol']!r}")
        rows.append(row)
    return rows

# The example plugin's documented layout (NVIDIA/nccl ext-tuner/example/README.md).
DOCUMENTED = {
    "collective_type": {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"},
    "algorithm": {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"},
    "protocol": {"ll", "ll128", "simple"},
}

BASE = Config((("NCCL_ALGO", None), ("NCCL_PROTO", None), ("NCCL_IB_QPS_PER_CONNECTION", None)))
TREE_LL = Config((("NCCL_ALGO", "Tree"), ("NCCL_PROTO", "LL"),
                  ("NCCL_IB_QPS_PER_CONNECTION", None)))
RING_SIMPLE_QP2 = Config((("NCCL_ALGO", "Ring"), ("NCCL_PROTO", "Simple"),
                          ("NCCL_IB_QPS_PER_CONNECTION", "2")))
QP4 = Config((("NCCL_ALGO", None), ("NCCL_PROTO", None), ("NCCL_IB_QPS_PER_CONNECTION", "4")))
SIZES = (1024, 4096, 1 << 20, 4 << 20)


def rounds(times: dict[int, float], jitter=(1.0, 1.03, 0.98)) -> list[dict[int, float]]:
    return [{s: t * j for s, t in times.items()} for j in jitter]


def split_winners():
    """Tree/LL wins the two small sizes, Ring/Simple/QP2 the two large ones."""
    base = {s: 100.0 for s in SIZES}
    return analyse(trials_from({
        BASE: rounds(base),
        TREE_LL: [{1024: 50.0 * j, 4096: 52.0 * j, 1 << 20: 100.0 * k, 4 << 20: 140.0 * j}
                  for j, k in ((1.0, 1.0), (1.03, 1.04), (0.98, 0.97))],
        RING_SIMPLE_QP2: [{1024: 101.0 * k, 4096: 100.0 * j, 1 << 20: 60.0 * j,
                           4 << 20: 55.0 * j}
                          for j, k in ((1.0, 1.0), (1.03, 1.01), (0.98, 0.99))],
    }), BASE)


def test_tuner_csv_rows_have_the_example_plugins_columns_and_values():
    lines = tuner_lines(split_winners(), BASE, nodes=2, ranks=16)
    assert lines[1] == ("# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,"
                        "nNodes,nRanks,numPipeOps,regBuff")
    data = [row for row in csv.reader(line for line in lines if not line.startswith("#"))]
    assert len(data) == 2
    for row in data:
        assert len(row) == 10
        fields = dict(zip(["collective_type", "min_bytes", "max_bytes", "algorithm", "protocol",
                           "channels", "nNodes", "nRanks", "numPipeOps", "regBuff"], row))
        for name, accepted in DOCUMENTED.items():
            assert fields[name] in accepted
        assert (fields["channels"], fields["nNodes"], fields["nRanks"], fields["numPipeOps"],
                fields["regBuff"]) == ("-1", "2", "16", "-1", "-1")
    assert data[0][:5] == ["allreduce", "1024", "4096", "tree", "ll"]
    # the next range starts just above the last measured size of the previous one
    assert data[1][:5] == ["allreduce", "4097", str(4 << 20), "ring", "simple"]
    assert any("also export NCCL_IB_QPS_PER_CONNECTION=2" in line for line in lines)
    assert [r["algorithm"] for r in read_tuner_csv("\n".join(lines))] == ["tree", "ring"]


def test_tuner_csv_leaves_out_winners_the_plugin_cannot_express():
    rows = analyse(trials_from({BASE: rounds({1024: 100.0}), QP4: rounds({1024: 50.0})}), BASE)
    lines = tuner_lines(rows, BASE, nodes=1, ranks=8)
    assert read_tuner_csv("\n".join(lines)) == []
    assert any("does not pin one NCCL_ALGO and one NCCL_PROTO" in line for line in lines)


def test_on_rccl_only_ring_and_tree_rows_are_written():
    nvls = Config((("NCCL_ALGO", "NVLS"), ("NCCL_PROTO", "Simple"),
                   ("NCCL_IB_QPS_PER_CONNECTION", None)))
    rows = analyse(trials_from({BASE: rounds({1024: 100.0, 1 << 20: 100.0}),
                                TREE_LL: rounds({1024: 50.0, 1 << 20: 100.0}),
                                nvls: rounds({1024: 100.0, 1 << 20: 40.0})}), BASE)
    rccl = tuner_lines(rows, BASE, nodes=2, ranks=16, library="rccl")
    assert [r["algorithm"] for r in read_tuner_csv("\n".join(rccl))] == ["tree"]
    assert any("RCCL's tuner applies ring and tree only; no row" in line for line in rccl)
    assert "(trials ran on RCCL)" in rccl[0]
    nccl = tuner_lines(rows, BASE, nodes=2, ranks=16, library="nccl")
    assert [r["algorithm"] for r in read_tuner_csv("\n".join(nccl))] == ["tree", "nvls"]


def test_no_line_is_longer_than_the_plugins_read():
    # A winner with many variables besides the algorithm makes a long "also export" comment;
    # a 256th byte would be read by the plugins' fgets as the start of another line.
    many = tuple((f"NCCL_SOME_LONG_VARIABLE_NAME_{i}", f"value-{i}-" + "x" * 20) for i in range(8))
    base = Config((("NCCL_ALGO", None), ("NCCL_PROTO", None),
                   *((name, None) for name, _ in many)))
    wide = Config((("NCCL_ALGO", "Ring"), ("NCCL_PROTO", "Simple"), *many))
    rows = analyse(trials_from({base: rounds({1024: 100.0}), wide: rounds({1024: 50.0})}), base)
    lines = tuner_lines(rows, base, nodes=1, ranks=8)
    assert max(len(line.encode()) for line in lines) <= 255
    comments = " ".join(line[2:] for line in lines if line.startswith("# "))
    assert all(f"{name}={value}" in comments for name, value in many)   # wrapped, not cut
    assert len(read_tuner_csv("\n".join(lines))) == 1
    with pytest.raises(ValueError, match="256 bytes; the plugin reads 255"):
        read_tuner_csv("#" + "x" * 255)


@pytest.mark.parametrize("line, problem", [
    ("allreduce,0,10,ring,simple,-1,1", "7 fields"),
    ("alltoall,0,10,ring,simple,-1,1,8", "collective 'alltoall'"),
    ("allreduce,0,10,Ring,simple,-1,1,8", "algorithm 'Ring'"),
])
def test_reading_back_refuses_lines_the_plugin_would_misread(line, problem):
    with pytest.raises(ValueError, match=problem):
        read_tuner_csv(line)


def source(path) -> str:
    script = ('set -eu; source "$1"; printf "%s|%s|%s" "${NCCL_ALGO-unset}" '
              '"${NCCL_PROTO-unset}" "${NCCL_IB_QPS_PER_CONNECTION-unset}"')
    proc = subprocess.run(["bash", "-c", script, "bash", str(path)], capture_output=True,
                          text=True, timeout=10, env={"PATH": "/usr/bin:/bin",
                                                      "NCCL_PROTO": "LL128"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_env_out_exports_the_set_that_wins_everywhere(tmp_path):
    rows = analyse(trials_from({BASE: rounds({1024: 100.0, 4096: 100.0}),
                                QP4: rounds({1024: 50.0, 4096: 100.0}, (1.03, 1.0, 0.97))}),
                   BASE)
    rec = recommend(rows, BASE)
    assert rec.config == QP4 and rec.everywhere       # wins at 1K, not slower at 4K
    path = tmp_path / "best.env"
    path.write_text("\n".join(env_lines(rows, BASE, ["tuned on 8 ranks"])) + "\n")
    assert source(path) == "unset|unset|4"            # unset lines clear an inherited value


def test_env_out_without_a_single_winner_names_what_the_best_set_loses(tmp_path):
    rows = split_winners()
    rec = recommend(rows, BASE)
    assert rec.config == RING_SIMPLE_QP2 and not rec.everywhere
    assert len(rec.losses) == 2 and all("Tree" in loss for loss in rec.losses)
    path = tmp_path / "best.env"
    path.write_text("\n".join(env_lines(rows, BASE)) + "\n")
    assert source(path) == "Ring|Simple|2"
    assert "loses at:" in path.read_text()


def test_env_out_with_no_winner_exports_nothing(tmp_path):
    rows = analyse(trials_from({BASE: rounds({1024: 100.0}),
                                QP4: rounds({1024: 100.0}, (1.02, 0.99, 1.0))}), BASE)
    lines = env_lines(rows, BASE)
    assert any(NO_WINNER in line for line in lines)
    path = tmp_path / "none.env"
    path.write_text("\n".join(lines) + "\n")
    assert source(path) == "unset|LL128|unset"


def test_tune_records_carry_ratio_interval_verdict_and_failures():
    rows = split_winners()
    records = tune_records(rows, BASE, {QP4: "hung: no exit within --timeout 60 s"}, 0.95)
    tree_small = next(r for r in records if r.get("label") == "NCCL_ALGO=Tree NCCL_PROTO=LL"
                      and r.get("size_bytes") == 1024)
    assert tree_small["verdict"] == "faster" and tree_small["winner"]
    assert tree_small["ratio_ci_low"] > 1 and tree_small["ratio"] == pytest.approx(2.0)
    assert tree_small["ci_method"].startswith("t-interval")
    failed = [r for r in records if r["verdict"] == "failed"]
    assert len(failed) == 1
    assert {k: failed[0][k] for k in ("kind", "config", "label", "baseline", "reason",
                                      "winner", "size_bytes")} == {
        "kind": "tune", "config": QP4.as_dict(), "label": "NCCL_IB_QPS_PER_CONNECTION=4",
        "baseline": False, "reason": "hung: no exit within --timeout 60 s", "winner": False,
        "size_bytes": None}
