"""`collscope watch` around jobs whose checks judge no time, so they run in the parallel pass:
srun-style independent processes with several groups, send/recv and the job's own
sitecustomize, and a script that never makes a process group, with and without watch for the
exit codes. One batch of jobs, run side by side (module-scoped); every assertion shares it.
test_watch.py holds the torchrun jobs whose lateness and stalls are judged."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dist.watch_jobs import SCRIPTS, Job, start, watch
from tests.helpers import REPO, free_port

pytestmark = pytest.mark.dist


@pytest.fixture(scope="module")
def jobs() -> Iterator[tuple[dict[str, Job], dict[tuple[str, bool], Job]]]:
    """srun-style ranks, and a script without a group (exit code 0 and 7, watched and not),
    in a folder of our own (other checkouts' pytest sessions prune basetemps mid-run)."""
    with tempfile.TemporaryDirectory(prefix="collscope-watch-wrapping-") as name:
        folder = Path(name)
        user_site = folder / "user-site"
        user_site.mkdir()
        (user_site / "sitecustomize.py").write_text(
            "import os, sys\nwith open(os.environ['USER_SITE_LOG'], 'a') as log:\n"
            "    log.write(' '.join(sys.argv) + '\\n')\n")
        port = str(free_port())
        srun = {f"srun{r}": start(folder, f"srun{r}", watch("--interval", "0.3") + [
            sys.executable, str(SCRIPTS / "watch_groups.py")], RANK=str(r), WORLD_SIZE="3",
            MASTER_ADDR="127.0.0.1", MASTER_PORT=port, STEPS="30",
            PYTHONPATH=f"{REPO}{os.pathsep}{user_site}",
            USER_SITE_LOG=str(folder / "user-site.log")) for r in range(3)}
        no_group = {(code, watched): start(folder, f"nogroup{code}{watched}", (
            watch() if watched else []) + [sys.executable, str(SCRIPTS / "watch_no_group.py")],
            EXIT_CODE=code) for code in ("0", "7") for watched in (True, False)}
        yield ({name: job.wait() for name, job in srun.items()},
               {key: job.wait() for key, job in no_group.items()})


def test_srun_style_ranks_with_groups_send_recv_and_their_own_sitecustomize(jobs):
    srun, _ = jobs
    ranks = [srun[f"srun{r}"] for r in range(3)]
    assert [j.returncode for j in ranks] == [0, 0, 0], ranks[0].stderr[-3000:]
    assert ranks[0].stdout == ("all_reduce [90.0, 90.0, 90.0, 90.0]\n"
                               "pairs and send/recv total 150.0\n")
    assert [j.stdout for j in ranks[1:]] == ["", ""]
    log = (ranks[0].out.parent / "user-site.log").read_text().splitlines()
    # Each rank's own python ran it (argv[0] the script), as it would without watch.
    assert sum(line.startswith(str(SCRIPTS / "watch_groups.py")) for line in log) == 3
    for job in ranks:
        assert "Traceback" not in job.stderr and "switched off" not in job.stderr


def test_exit_codes_without_a_process_group_are_the_scripts_own(jobs):
    _, no_group = jobs
    for code in ("0", "7"):
        assert no_group[(code, True)].returncode == no_group[(code, False)].returncode == \
            int(code)


def test_a_script_without_a_process_group_runs_unchanged(jobs):
    _, no_group = jobs
    for code in ("0", "7"):
        watched, plain = no_group[(code, True)], no_group[(code, False)]
        assert watched.stdout == plain.stdout == \
            "distributed available: True, initialised: False\n"
        assert watched.stderr == plain.stderr == ""
