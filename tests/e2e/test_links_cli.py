"""collscope links as users run it: bad input exits 2 on one line; local ranks give a matrix."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli, usage_error_in_process


@pytest.mark.parametrize("args,needle", [
    (["--pairs", "some"], "--pairs"),
    (["-b", "12Q"], "-b/--size"),
    (["--fraction", "1.5"], "--fraction"),
    (["-n", "0"], "-n/--iters"),
    (["--nproc", "1"], "at least 2 ranks"),
])
def test_bad_input_is_one_line_exit_2(capsys, args, needle):
    assert needle in usage_error_in_process(capsys, ["links", *args])


@pytest.mark.serial   # judges link bandwidth
def test_local_ranks_measure_every_pair_and_json_to_stdout_is_only_json():
    proc = run_cli("links", "--nproc", "3", "-b", "256K", "-n", "2", "-w", "1", "--json", "-",
                   "--timeout", "60", timeout=120)
    assert proc.returncode in (0, 1), proc.stderr        # noisy CPU pairs may fail the gate
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert records[0]["kind"] == "run" and records[0]["command"] == "links"
    assert records[0]["extra"]["rounds"] == {"intra": 3}
    # Raw tries as each round ends, then the judged links, the nodes and the summary.
    kinds = [r["kind"] for r in records]
    first_link = kinds.index("link")
    assert set(kinds[1:first_link]) <= {"link_try"} and kinds[-1] == "links_summary"
    tries = [r for r in records if r["kind"] == "link_try" and r["attempt"] == 0]
    assert len(tries) == 6 and all(len(t["times_us"]) == 2 for t in tries)
    for t in tries:
        assert t["time_us"] == pytest.approx(sorted(t["times_us"])[0] / 2
                                             + sorted(t["times_us"])[1] / 2)
    summary = records[-1]
    assert summary["verdict"] == ("fail" if proc.returncode else "pass")
    links = [r for r in records if r["kind"] == "link"]
    assert sorted((r["src_rank"], r["dst_rank"]) for r in links) == [
        (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    for link in links:
        assert link["scope"] == "intra" and link["size_bytes"] == 256 * 1024
        assert link["gbs"] == pytest.approx(link["size_bytes"] / link["time_us"] / 1e3)
    (node,) = [r for r in records if r["kind"] == "node"]
    assert node["ranks"] == [0, 1, 2] and node["verdict"] == "ok"
    assert proc.returncode == (1 if any(r["verdict"] != "ok" for r in links) else 0)


def test_help_shows_examples():
    proc = run_cli("links", "--help", timeout=30)
    assert proc.returncode == 0 and "srun" in proc.stdout and "torchrun" in proc.stdout


@pytest.mark.serial   # judges link bandwidth
def test_a_slow_sender_is_named_and_a_transient_one_cleared_by_the_confirmation(tmp_path):
    """One run, two planted senders: rank 2 sleeps 200 ms before every exchange (a slow
    sender), rank 1 100 ms in the first measurement only (a transient slowdown; shorter, so
    that rank 2 is still late for rank 1 when both sleep). Delays this long keep the 5x
    margins below on a loaded 2-core host (with 50 and 25 ms, 2 of 5 loaded runs fell short:
    rank 2's 2->1 link only waits the 25 ms difference)."""
    from collscope.testing.faults import FAULT_ENV
    from tests.helpers import cli_env, read_records

    out = tmp_path / "links.jsonl"
    # --fraction 0.4: 4 ranks on 2 cores exchange 4 MiB in 2-8 ms (a 4x scheduler spread), so
    # a healthy link crosses the default 70 % line now and then, and a clean-clone CI run once
    # named rank 1 after every try of its links (--confirm 2) had crossed it. 40 % of the median
    # (about 0.45 GB/s here) leaves a 2x margin to healthy noise and a 10x one to the planted
    # faults (0.01-0.04 GB/s).
    proc = run_cli("links", "--nproc", "4", "-b", "4M", "-n", "3", "-w", "1", "--confirm", "2",
                   "--fraction", "0.4", "--json", str(out), "--timeout", "60",
                   env=cli_env(**{FAULT_ENV: "delay@2:200,blip@1:100"}), timeout=120)
    assert proc.returncode == 1, proc.stderr
    records = read_records(out)
    links = [r for r in records if r["kind"] == "link"]
    sends = {rank: [r for r in links if r["src_rank"] == rank] for rank in range(4)}
    # The receivers waited 200 ms per exchange for rank 2's data (4 MiB moves in a few ms),
    # in both tries: everything rank 2 sends fails, so rank 2 is named, not its three links.
    assert all(r["verdict"] == "gpu" and len(r["tries_gbs"]) == 3 for r in sends[2])
    (node,) = [r for r in records if r["kind"] == "node"]
    assert node["slow_ranks"] == [2]
    assert f"SLOW RANK {node['host']} rank 2 (cpu): inside the node, every link it sends" \
        in proc.stdout
    assert max(r["gbs"] for r in sends[2]) < min(r["gbs"] for r in sends[0] + sends[3]) / 5
    # Rank 1 sent slowly to ranks 0 and 3 in the first measurement only (rank 2, sleeping
    # longer, did not wait for it): those links failed, ran again (whole rounds), and keep
    # their best try, far faster than the first.
    cleared = [r for r in sends[1] if r["dst_rank"] != 2]
    assert all(len(r["tries_gbs"]) >= 2 and max(r["tries_gbs"][1:]) > 5 * r["tries_gbs"][0]
               and r["gbs"] == pytest.approx(max(r["tries_gbs"])) for r in cleared)
    retries = [r for r in records if r["kind"] == "link_try" and r["attempt"] == 1]
    assert {(r["src_rank"], r["dst_rank"]) for r in retries} >= {
        (1, 0), (1, 3), (2, 0), (2, 1), (2, 3)}
    summary = records[-1]
    first = summary["confirmations"][0]
    assert first["failing_before"] >= 5 and "confirmation 1:" in proc.stdout
    # Judged on the best try against the first measurement's threshold. (Noisy CPU pairs on
    # 2 cores may still fail twice, so verdicts are checked against that threshold.)
    (limit,) = summary["thresholds"]
    for link in links:
        assert (link["verdict"] == "ok") == (link["gbs"] >= limit["limit_gbs"]), link
    assert "verdict: FAIL" in proc.stdout


@pytest.mark.serial   # bounds how soon a hung rank ends
def test_a_hung_rank_ends_every_rank_within_the_timeout_naming_the_round(tmp_path):
    import time

    from collscope.testing.faults import FAULT_ENV
    from tests.helpers import cli_env, read_records

    started = time.monotonic()
    out = tmp_path / "links.jsonl"
    proc = run_cli("links", "--nproc", "3", "-b", "64K", "-n", "1", "-w", "0", "--timeout", "4",
                   "--json", str(out), env=cli_env(**{FAULT_ENV: "hang@1:1"}), timeout=60)
    assert proc.returncode == 1
    assert time.monotonic() - started < 40
    assert "Traceback" not in proc.stderr
    assert "links intra-node round 2/3" in proc.stderr          # where each rank waited
    assert "rank 1: no progress for 4 s" in proc.stderr        # the hung rank itself
    # The round that ended before the hang is on disk: round 1 of 3 ranks is the pair 1-2.
    records = read_records(out)
    assert [r["kind"] for r in records] == ["run", "link_try", "link_try"]
    assert {(r["src_rank"], r["dst_rank"]) for r in records[1:]} == {(1, 2), (2, 1)}


def test_a_json_file_that_fills_up_mid_run_is_said_once_and_every_rank_finishes(tmp_path):
    from collscope.testing.faults import FAULT_ENV
    from tests.helpers import cli_env, read_records

    out = tmp_path / "links.jsonl"
    proc = run_cli("links", "--nproc", "3", "-b", "64K", "-n", "1", "-w", "0", "--json",
                   str(out), "--timeout", "30", env=cli_env(**{FAULT_ENV: "disk-full@0:3"}),
                   timeout=90)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "verdict: " in proc.stdout   # judged and shown
    assert f"collscope links: --json: writing '{out}' failed after 3 record(s), which it " \
           "holds: No space left on device" in proc.stderr.splitlines()
    assert [r["kind"] for r in read_records(out)] == ["run", "link_try", "link_try"]
