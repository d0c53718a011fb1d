"""A pre-flight that fails on one rank only ends every rank with exit 2, at once, and the
failing rank says why (no rank is left blocked in its first collective)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO, cli_env, free_port

pytestmark = pytest.mark.dist
SCRIPT = REPO / "tests" / "dist" / "scripts" / "one_rank_preflight_fails.py"


def _two_ranks(failing: int) -> list[tuple[int, str]]:
    port = str(free_port())
    ranks = [subprocess.Popen(
        [sys.executable, str(SCRIPT), str(failing)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=REPO,
        env=cli_env(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                    LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
        for rank in range(2)]
    try:
        outputs = [rank.communicate(timeout=60) for rank in ranks]
    finally:
        for rank in ranks:
            rank.kill()
    return [(rank.returncode, err) for rank, (_out, err) in zip(ranks, outputs)]


@pytest.mark.parametrize("failing", [1, 0])
def test_preflight_failing_on_one_rank_ends_every_rank_with_exit_2(failing):
    (code0, err0), (code1, err1) = _two_ranks(failing)
    assert (code0, code1) == (2, 2), err0 + err1
    errs = [err0, err1]
    (line,) = errs[failing].strip().splitlines()
    assert line == (f"collscope train: rank {failing}: --preset: needs 9 GiB per rank but "
                    f"1 GiB is free (rank {failing}'s device)")
    assert errs[1 - failing] == ""
