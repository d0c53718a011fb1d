"""`collscope tune` on real gloo ranks: the emulated two-node cluster with a fast and a slow
interface per node (network namespaces), and a planted hang that must not stop the sweep."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from tests.helpers import REPO, cli_env, read_records, run_cli

pytestmark = pytest.mark.dist
SCRIPTS = REPO / "tests" / "dist" / "scripts"
sys.path.insert(0, str(REPO / "benchmarks"))

from netns_cluster import ClusterUnavailable, netns_cluster  # noqa: E402

FAST, SLOW = "1gbit", "100mbit"
NO_WINNER = "no configuration beats the defaults beyond noise"


def tune_on_cluster(rates: tuple[str, str], tmp_path, *extra: str, rounds: int = 4):
    """Run tune over GLOO_SOCKET_IFNAME=<network 1>,<network 0>; (process, records, seconds).
    Network 1's interface comes first, so it is the baseline (GLOO_SOCKET_IFNAME has no
    usable unset state)."""
    out = tmp_path / "tune.jsonl"
    wrapper = f"{sys.executable} {SCRIPTS / 'netns_tune_launch.py'} cs15 2 2 150 1 {{cmd}}"
    try:
        with netns_cluster(nodes=2, networks=2, link_rate=lambda _n, k: rates[k],
                           prefix="cs15", subnet=150) as cluster:
            started = time.monotonic()
            proc = run_cli("tune", "--launch", wrapper, "--space",
                           f"GLOO_SOCKET_IFNAME={cluster.interface(0, 1)},"
                           f"{cluster.interface(0, 0)}",
                           "--backend", "gloo", "-b", "256K", "-e", "1M", "-n", "10",
                           "-w", "1",
                           "--rounds", str(rounds), "--timeout", "60", "--json", str(out),
                           *extra,
                           timeout=240)
            elapsed = time.monotonic() - started
    except ClusterUnavailable as error:
        pytest.skip(str(error))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return proc, read_records(out), elapsed, cluster


@pytest.mark.serial   # compares the speed of configurations
def test_tune_picks_the_faster_interface_with_an_interval_above_one(tmp_path):
    env_out = tmp_path / "best.env"
    proc, records, elapsed, cluster = tune_on_cluster((FAST, SLOW), tmp_path,
                                                      "--env-out", str(env_out))
    fast = cluster.interface(0, 0)
    tuned = [r for r in records if r["kind"] == "tune" and not r["baseline"]]
    assert {r["config"]["GLOO_SOCKET_IFNAME"] for r in tuned} == {fast}
    assert len(tuned) == 2                                   # 256 KiB and 1 MiB
    for record in tuned:
        assert record["verdict"] == "faster" and record["winner"], record
        assert record["ratio_ci_low"] > 1.0, record
        # 1 Gbit/s vs 100 Mbit/s caps: several times faster (measured 9.5-10x), and not far
        # beyond the caps' 10x (tbf bursts, a retransmit on the slow link or per-op overheads
        # blur it; 30 still rules out a result of the wrong sign or a broken measurement)
        assert 2.0 < record["ratio"] < 30.0, record
    assert f"verdict: GLOO_SOCKET_IFNAME={fast} wins" in proc.stdout
    assert "t-interval on the mean log speed-up" in proc.stdout
    assert f"export GLOO_SOCKET_IFNAME={fast}" in env_out.read_text()
    trials = [r for r in records if r["kind"] == "tune_trial"]
    assert [t["status"] for t in trials] == ["ok"] * 8       # 2 configurations x 4 rounds
    assert elapsed < 120, elapsed


@pytest.mark.serial   # compares the speed of configurations
def test_tune_with_two_equal_interfaces_finds_nothing_beyond_noise(tmp_path):
    # 4 rounds, as the picking test above: fewer would only widen the intervals, which makes
    # "no winner" easier to get for the wrong reason. (Picking with 3: the ~10x interface's
    # Bonferroni-corrected lower bounds measured 3.5x and 8.6x, far above 1, but twice in
    # ~10 runs on a VM whose speed moved 50 % within minutes one round slowed the fast
    # trial enough that the interval, with 2 degrees of freedom, reached below 1. With 4
    # rounds and 10 iterations per trial one disturbed round no longer decides it.)
    # --min-gain 10: two equal tbf caps measured ratios 0.99-1.02 with interval bounds only
    # 3-13 % below the default 2 % line; the picking test's interface is ~10x faster.
    proc, records, elapsed, _cluster = tune_on_cluster((SLOW, SLOW), tmp_path, "--min-gain",
                                                       "10")
    assert f"verdict: {NO_WINNER}" in proc.stdout
    tuned = [r for r in records if r["kind"] == "tune" and not r["baseline"]]
    assert tuned and all(r["verdict"] in ("within noise", "slower") for r in tuned)
    assert not any(r["winner"] for r in tuned)
    assert elapsed < 120, elapsed


@pytest.mark.serial   # bounds how soon a hung trial ends
def test_a_hanging_configuration_is_recorded_failed_and_the_sweep_completes(tmp_path):
    """NCCL_ALGO does nothing on gloo: the wrapper plants a hang in the Tree trials."""
    out = tmp_path / "tune.jsonl"
    wrapper = (f"{sys.executable} {SCRIPTS / 'plant_fault_launch.py'} NCCL_ALGO=Tree hang@1:1 "
               "{cmd}")
    timeout = 8        # the hung trial's wait; a healthy trial here takes 2-3 s
    started = time.monotonic()
    proc = run_cli("tune", "--launch", wrapper, "--space", "NCCL_ALGO=Tree", "--backend",
                   "gloo", "-b", "1K", "-e", "16K", "-n", "2", "-w", "1", "--rounds", "2",
                   "--timeout", str(timeout), "--json", str(out), timeout=200)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    records = read_records(out)
    trials = [r for r in records if r["kind"] == "tune_trial"]
    tree = [t for t in trials if t["config"]["NCCL_ALGO"] == "Tree"]
    assert len(tree) == 1 and tree[0]["status"] == "failed"     # not run again in round 2
    assert tree[0]["wall_s"] < timeout + 10                     # killed at --timeout at worst
    assert "hung" in tree[0]["reason"] or "exit code" in tree[0]["reason"]
    others = [t for t in trials if t["config"]["NCCL_ALGO"] != "Tree"]
    assert len(others) == 2 and all(t["status"] == "ok" for t in others)   # the baseline
    failed = [r for r in records if r["kind"] == "tune" and r["verdict"] == "failed"]
    assert [r["config"]["NCCL_ALGO"] for r in failed] == ["Tree"]
    assert "failed (never recommended):" in proc.stdout
    assert time.monotonic() - started < 120


FAKE_SRUN = """#!{python}
# A stand-in for srun: records its arguments, then runs the command after the options.
import json, os, sys
with open({log!r}, "a") as log:
    log.write(json.dumps({{"argv": sys.argv[1:],
                          "NCCL_ALGO": os.environ.get("NCCL_ALGO")}}) + "\\n")
command = sys.argv[1:]
while command[0].startswith("--"):
    command.pop(0)
os.execv(command[0], command)
"""


def test_inside_a_slurm_allocation_trials_run_through_srun(tmp_path):
    log = tmp_path / "srun.log"
    srun = tmp_path / "bin" / "srun"
    srun.parent.mkdir()
    srun.write_text(FAKE_SRUN.format(python=sys.executable, log=str(log)))
    srun.chmod(0o755)
    env = cli_env(SLURM_JOB_ID="4242", PATH=f"{srun.parent}:{os.environ['PATH']}")
    proc = run_cli("tune", "--space", "NCCL_ALGO=Ring", "--backend", "gloo", "-b", "1K",
                   "-e", "1K", "-n", "2", "-w", "1", "--rounds", "1", "--timeout", "60",
                   env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["NCCL_ALGO"] for c in calls] == [None, "Ring"]    # the trial's env reaches srun
    for call in calls:
        assert call["argv"][:2] == ["--export=ALL", "--kill-on-bad-exit=1"]
        assert call["argv"][3:6] == ["-m", "collscope", "bench"]
    assert "trials via srun inside this Slurm allocation" in proc.stdout
