"""Output paths are checked by opening them as the writers will (collscope.records.jsonl probes,
cli._common checks), the writers turn a failed write into one line, and the small CLI checks
that run before any rank starts (train --trace, tune --trials-dir, overlap's world size, bench's
op/dtype message and its --help examples)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from collscope.errors import OutputError, UsageError
from collscope.records.jsonl import CsvWriter, JsonlWriter, check_writable, check_writable_folder
from tests.helpers import usage_error_in_process

ROOT = os.geteuid() == 0
# What os.access() waved through as root although every open or write fails there.
REFUSED = [("/proc/collscope-x.jsonl", "No such file or directory"),
           ("/sys/collscope-x.jsonl", "Permission denied"),
           ("/dev/full", "No space left on device")]


@pytest.mark.parametrize(("path", "why"), REFUSED)
def test_check_writable_opens_the_file_as_the_writer_will(path, why):
    if not os.path.exists(os.path.dirname(path)) or (path == "/dev/full"
                                                     and not os.path.exists(path)):
        pytest.skip(f"{path}: not on this system")
    with pytest.raises(UsageError) as error:
        check_writable("--csv", path)
    assert str(error.value) == f"--csv: cannot write '{path}': {why}"


def test_check_writable_leaves_nothing_behind(tmp_path: Path):
    existing = tmp_path / "kept.jsonl"
    existing.write_text("old\n")
    check_writable("--json", str(tmp_path / "new.jsonl"))
    check_writable("--json", str(existing))
    check_writable("--json", "/dev/null")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.jsonl"]
    assert existing.read_text() == "old\n"
    with pytest.raises(UsageError, match="cannot write '/nonexistent-x/o.jsonl': folder "
                                         "/nonexistent-x does not exist"):
        check_writable("--json", "/nonexistent-x/o.jsonl")


def test_check_writable_folder(tmp_path: Path):
    afile = tmp_path / "a.jsonl"
    afile.write_text("")
    for path in (afile, afile / "sub"):
        with pytest.raises(UsageError, match=f"--trace: cannot write into folder '{path}': "
                                             f"{afile} is a file, not a folder"):
            check_writable_folder("--trace", str(path))
    check_writable_folder("--trace", str(tmp_path / "new" / "deeper"))
    # Created and left for the writer; the probe file removed again.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "new"]
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["deeper"]
    assert list((tmp_path / "new" / "deeper").iterdir()) == []
    if ROOT and os.path.isdir("/proc"):
        with pytest.raises(UsageError, match="--trace: cannot write into folder '/proc/tr'"):
            check_writable_folder("--trace", "/proc/tr")


def test_every_node_checking_one_new_folder_at_once_passes(tmp_path: Path):
    # Each node's first rank checks the shared --trace folder at the same moment: no checker
    # may fail because another made or removed a folder in between (with removal, 166 of 400
    # concurrent checks failed).
    from concurrent.futures import ThreadPoolExecutor

    paths = [str(tmp_path / str(i) / "traces") for i in range(25)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda path: check_writable_folder("--trace", path),
                      [path for path in paths for _ in range(8)]))
    assert all(os.path.isdir(path) and not os.listdir(path) for path in paths)


def test_every_node_checking_one_new_file_at_once_passes(tmp_path: Path):
    # doctor --all-ranks --collect without {node}: every node's first rank checks one path.
    from concurrent.futures import ThreadPoolExecutor

    paths = [str(tmp_path / f"b{i}.tar.gz") for i in range(50)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda path: check_writable("--collect", path),
                      [path for path in paths for _ in range(8)]))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_failed_write_is_one_line_naming_the_flag_and_the_file():
    writer = JsonlWriter("/dev/full", "--json")
    with pytest.raises(OutputError) as error:
        writer.write({"kind": "run"})
    assert str(error.value) == ("--json: writing '/dev/full' failed after 0 record(s), which "
                                "it holds: No space left on device")
    writer.write({"kind": "result"})       # ended: later records are dropped, not raised again
    writer.close()
    with pytest.raises(UsageError, match="--csv: writing '/dev/full' failed after 0"):
        CsvWriter("/dev/full", "--csv")    # the header, before anything is measured


def test_a_writer_that_cannot_open_is_bad_input(tmp_path: Path):
    with pytest.raises(UsageError, match=f"--json: cannot write '{tmp_path}': "):
        JsonlWriter(tmp_path, "--json")


def test_train_trace_and_tune_trials_dir_are_checked_before_anything_runs(capsys, tmp_path):
    afile = tmp_path / "b1.jsonl"
    afile.write_text("")
    # Both trained (or swept) first, then ended in a FileExistsError traceback, rc 1.
    line = usage_error_in_process(capsys, ["train", "--steps", "3", "--warmup", "2",
                                           "--trace", str(afile)])
    assert line.startswith(f"collscope train: --trace: cannot write into folder '{afile}'")
    line = usage_error_in_process(capsys, ["tune", "--space", "NCCL_ALGO=Ring",
                                           "--trials-dir", str(afile)])
    assert line.startswith(f"collscope tune: --trials-dir: cannot write into folder '{afile}'")


def test_overlap_needs_two_ranks(capsys):
    # A one-rank all_reduce communicates nothing: it printed "overlap efficiency 4.29", rc 0.
    line = usage_error_in_process(capsys, ["overlap", "--nproc", "1", "--iters", "2",
                                           "--matmul-dim", "64", "-b", "64K"])
    assert line == ("collscope overlap: --nproc: overlap needs at least 2 ranks (a 1-rank "
                    "all_reduce communicates nothing)")


def test_avg_with_an_integer_dtype_on_gloo_says_what_is_accepted():
    from collscope.bench.config import BenchConfig

    with pytest.raises(UsageError) as error:
        BenchConfig(ops=["all"], dtypes=["float", "int32"]).validate_for_job(2, "gloo")
    assert str(error.value) == ("--op: avg on gloo needs a floating dtype and int32 is not "
                                "one; use --op sum,prod,min,max with it, or avg with -d half, "
                                "float, double, bfloat16 only")


def test_every_local_bench_help_example_is_accepted_on_cpu():
    from collscope.cli import build_parser
    from collscope.cli.bench import EXAMPLES, config_from_args

    examples = [shlex.split(line.split("#")[0])[1:] for line in EXAMPLES.splitlines()
                if line.strip().startswith("collscope bench")]
    assert len(examples) >= 8
    for argv in examples:
        args = build_parser().parse_args(argv)
        config_from_args(args).validate_for_job(args.nproc or 2, "gloo")


def test_train_timing_states_the_confidence_level_of_its_interval():
    import torch

    from collscope.train.analysis import exposed_comm_ci
    from collscope.train.measure import timing_method

    assert exposed_comm_ci([3.0, 5.0, 4.0], [1.0, 1.0, 1.0]).confidence == 0.75
    few = timing_method(torch.device("cpu"), "ddp", 3)
    assert "distribution-free 75% CI (order statistics; 3 steps are too few for 95%)" in few
    assert "95% CI" not in few
    assert "distribution-free 95% CI (order statistics)" in \
        timing_method(torch.device("cpu"), "ddp", 20)
