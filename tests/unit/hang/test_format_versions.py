"""`collscope hang` on the dumps of every Flight Recorder format torch 2.5-2.15 writes: one
TP/DP cascade (rank 5 never enters its TP all_reduce) dumped by torch 2.8, 2.9, 2.13 and 2.15
(gloo, pickle and JSON) and built in the NCCL format of torch 2.5-2.7; and the empty dumps of
torch 2.9's gloo without TORCH_FR_BUFFER_SIZE, which are no verdict (exit 3), never "no hang"."""

from __future__ import annotations

import pytest

from collscope.hang import Cause, analyse_paths
from collscope.hang.dumps import load_pickle
from collscope.hang.formats import NothingRecorded, releases, what_to_set
from tests.conftest import fixture_path
from tests.helpers import run_cli

CASCADES = [
    (("flight-recorder", "torch2.8_gloo_cascade_8ranks"), "2.9"),
    (("flight-recorder", "torch2.9_gloo_cascade_8ranks"), "2.10"),
    (("flight-recorder", "torch2.13_gloo_cascade_8ranks"), "2.10"),
    (("flight-recorder", "torch2.15_gloo_cascade_8ranks"), "2.10"),
    (("own", "flight-recorder", "nccl_fr2.4_cascade_8ranks_pickle"), "2.4"),
    (("own", "flight-recorder", "nccl_fr2.4_cascade_8ranks_json"), "2.4"),
]


@pytest.mark.parametrize("parts,version", CASCADES, ids=[p[-1] for p, _ in CASCADES])
def test_every_format_names_the_root_of_the_sub_group_cascade(parts, version):
    analysis = analyse_paths([fixture_path(*parts)])
    verdict = analysis.verdict
    assert {d.version for d in analysis.dumps} == {version}
    assert verdict.culprit_ranks == [5] and verdict.cause == Cause.NOT_ENTERED
    assert (verdict.group, verdict.collective, verdict.seq) == ("2", "all_reduce", 4)
    assert verdict.waiting_ranks == [0, 1, 2, 3, 4, 6, 7]
    assert analysis.world == tuple(range(8)) and analysis.missing == {}


def test_torch_2_15_gloo_lists_a_dp_pair_under_the_empty_name_on_every_rank():
    folder = fixture_path("flight-recorder", "torch2.15_gloo_cascade_8ranks")
    for rank in range(8):
        host = "node-01" if rank < 4 else "node-02"
        dump = load_pickle((folder / f"job42_{host}_{rank}").read_bytes())
        assert dump["pg_config"] == {"": {"name": "", "desc": "", "ranks": "[0, 1]"}}
    # read as the last gloo group made, not as the world: every rank is analysed
    assert [d.rank for d in analyse_paths([folder]).dumps] == list(range(8))


def test_the_nccl_format_of_torch_2_5_to_2_7_lists_every_group_by_name():
    folder = fixture_path("own", "flight-recorder", "nccl_fr2.4_cascade_8ranks_pickle")
    analysis = analyse_paths([folder])
    assert {name: g.key.ranks for name, g in analysis.groups.items()} == {
        "0": tuple(range(8)), "1": (0, 1, 2, 3), "2": (4, 5, 6, 7), "3": (0, 4),
        "4": (1, 5), "5": (2, 6), "6": (3, 7)}
    assert not any(g.members_inferred for g in analysis.groups.values())
    assert "Rank 5's last call there: all_reduce #3 at fr_hang_job.py:72 in main" in \
        analysis.verdict.headline


def test_empty_dumps_are_no_verdict_with_the_variable_to_set():
    folder = fixture_path("flight-recorder", "torch2.9_gloo_unset_8ranks")
    with pytest.raises(NothingRecorded, match="TORCH_FR_BUFFER_SIZE=2000") as raised:
        analyse_paths([folder])
    assert "dumps of 8 rank(s) hold no entries" in str(raised.value)
    assert "torch 2.8-2.10 records gloo only when it is set" in str(raised.value)
    proc = run_cli("hang", str(folder), "--json", "-", timeout=60)
    assert proc.returncode == 3 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("collscope hang: warning: PATH: no verdict:")
    assert "no hang" not in line


def test_a_set_with_one_empty_dump_is_still_analysed(tmp_path):
    source = fixture_path("flight-recorder", "torch2.13_gloo_cascade_8ranks")
    for path in source.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    empty = fixture_path("flight-recorder", "torch2.9_gloo_unset_8ranks", "job42_node-02_6")
    (tmp_path / "job42_node-02_6").write_bytes(empty.read_bytes())
    # rank 6's ring is empty (it never entered anything there): it is analysed with the rest
    verdict = analyse_paths([tmp_path]).verdict
    assert verdict.found and 5 in verdict.culprit_ranks


@pytest.mark.parametrize("version,torch,says", [
    ("2.4", "torch 2.5-2.7", "set TORCH_NCCL_TRACE_BUFFER_SIZE=2000 in the job's environment "
     "and dump again (torch 2.5-2.7 records NCCL/RCCL only, gloo not at all)"),
    ("2.9", "torch 2.8", "set TORCH_FR_BUFFER_SIZE=2000 in the job's environment and dump "
     "again (torch 2.8-2.10 records gloo only when it is set)"),
    ("2.10", "torch 2.9-2.15", "set TORCH_FR_BUFFER_SIZE=2000 in the job's environment and "
     "dump again (torch 2.8-2.10 records gloo only when it is set)"),
    ("9.9", "an unknown torch", "set TORCH_FR_BUFFER_SIZE=2000 in the job's environment "
     "(torch 2.5-2.7: TORCH_NCCL_TRACE_BUFFER_SIZE) and dump again"),
])
def test_the_format_names_its_releases_and_what_to_set(version, torch, says):
    assert releases(version) == torch
    assert what_to_set(version).startswith(says)
