"""`collscope hang` on Flight Recorder dumps that real gloo jobs write at test time: each fault
class planted through collscope/testing/faults.py in its own job (all jobs run at once, one
module-scoped run), dumped with _dump_fr_trace / _dump_fr_trace_json as dumpers write them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from collscope.hang import Cause, analyse_paths, analysis_records
from tests.dist.scripts.fr_hang_job import make_dumps
from tests.helpers import cli_env, run_cli

pytestmark = pytest.mark.dist
# Every job's ranks end on their own within seconds on a quiet machine; a loaded 2-core one
# (load 30) took 40 s for one 4-rank job.
DEADLINE_S = 300


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_dumps(tmp_path_factory.mktemp("fr"), cli_env(), DEADLINE_S)


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_skipped_collective_names_the_rank_that_never_entered(dumps):
    assert _files(dumps["skip"]) == sorted(f"nccl_trace_rank_{r}{suffix}" for r in range(4)
                                           for suffix in ("", ".json"))
    analysis = analyse_paths([dumps["skip"]])      # pickle and JSON of each rank: kept once
    assert len(analysis.dumps) == 4 and {d.fmt for d in analysis.dumps} == {"pickle"}
    verdict = analysis.verdict
    assert verdict.culprit_ranks == [2] and verdict.cause == Cause.NOT_ENTERED
    assert verdict.collective == "all_reduce" and verdict.waiting_ranks == [0, 1, 3]
    assert "Rank 2's last call there: broadcast" in verdict.headline


def test_json_dumps_read_like_pickles(dumps, tmp_path):
    for path in dumps["skip"].glob("*.json"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    analysis = analyse_paths([tmp_path])
    assert {d.fmt for d in analysis.dumps} == {"json"}
    assert analysis.verdict.culprit_ranks == [2] and analysis.verdict.cause == Cause.NOT_ENTERED


def test_op_mismatch_names_the_rank_that_called_another_collective(dumps):
    analysis = analyse_paths([dumps["op"]])
    present = {d.rank for d in analysis.dumps}
    verdict = analysis.verdict
    assert verdict.culprit_ranks == [3]
    # gloo may abort the odd rank when the messages do not fit: then it left no dump.
    assert verdict.cause == (Cause.OP_MISMATCH if 3 in present else Cause.DEAD)


def test_size_mismatch_names_the_rank_with_other_sizes(dumps):
    analysis = analyse_paths([dumps["size"]])
    verdict = analysis.verdict
    assert analysis.missing, "gloo aborts a rank on a size mismatch: its dump is missing"
    if 1 in {d.rank for d in analysis.dumps}:
        assert verdict.culprit_ranks == [1] and verdict.cause == Cause.SIZE_MISMATCH
        assert "[8192]" in verdict.headline and "[4096]" in verdict.headline
    else:
        assert verdict.culprit_ranks == [1] and verdict.cause == Cause.DEAD


def test_dead_rank_is_named_from_its_missing_dump(dumps):
    assert "_dump_1" not in _files(dumps["dead"])
    analysis = analyse_paths([dumps["dead"]])
    assert analysis.missing == {1: "no dump"}
    assert analysis.verdict.culprit_ranks == [1] and analysis.verdict.cause == Cause.DEAD


def test_cascade_root_is_the_one_tp_rank_and_hosts_come_from_the_names(dumps):
    analysis = analyse_paths([dumps["cascade"]])
    verdict = analysis.verdict
    assert verdict.culprit_ranks == [5] and verdict.cause == Cause.NOT_ENTERED
    assert verdict.hosts == {r: "node-01" if r < 4 else "node-02" for r in range(8)}
    assert verdict.headline.startswith("HANG: rank 5 (node-02) never entered all_reduce")
    assert "(ranks 4-7)" in verdict.headline
    # Its TP peers wait in TP, rank 1 in DP with it, ranks 0, 2, 3 in DP with ranks 4, 6, 7.
    assert verdict.waiting_ranks == [0, 1, 2, 3, 4, 6, 7]
    stuck = {tuple(f.channel.group.key.ranks): f for f in analysis.findings if f.stuck}
    assert stuck[(4, 5, 6, 7)].culprits == [5]
    assert stuck[(0, 4)].culprits == [4]      # a victim named in its own group, not at the root


def test_healthy_job_names_nobody_and_exits_0(dumps):
    assert len(_files(dumps["healthy"])) == 4
    assert analyse_paths([dumps["healthy"]]).verdict.culprit_ranks == []
    proc = run_cli("hang", str(dumps["healthy"]), timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("no hang"), proc.stdout


def test_cli_on_the_cascade_exits_1_with_the_verdict_first(dumps, tmp_path):
    proc = run_cli("hang", str(dumps["cascade"]), "--json", str(tmp_path / "h.jsonl"),
                   timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("HANG: rank 5 (node-02)")
    assert os.path.getsize(tmp_path / "h.jsonl") > 0


def test_beside_fr_trace_on_the_cascade_collscope_analyses_what_it_cannot(dumps):
    from benchmarks.hang_vs_fr_trace import compare

    case = compare("cascade", dumps["cascade"], (5,))
    assert case.fr.status != "analysed"      # gloo's pg_config: KeyError on ('1', rank)
    assert case.holds and case.collscope == [5]


def test_every_job_gives_the_same_verdict_streamed_reduced_and_read_whole(dumps):
    from collscope.hang import render_text

    def outcome(folder: Path, **reading) -> str:
        analysis = analyse_paths([folder], **reading)
        return render_text(analysis) + repr(analysis_records(analysis))

    for key, folder in dumps.items():
        assert outcome(folder, workers=2) == outcome(folder, reduce=False), key
