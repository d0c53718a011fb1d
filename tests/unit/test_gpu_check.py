"""benchmarks/gpu_check.py on CPU: "no GPU: skipped", and every GPU item's verdict logic
against fakes shaped like collscope's real outputs (tables, JSON Lines, doctor JSON)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from collscope.bench.output import DeviceLine, column_header, device_block, row
from collscope.errors import UsageError
from collscope.records.bench import BenchResult
from collscope.runtime.dist import check_ranks_fit
from tests.helpers import REPO, cli_env

SCRIPT = REPO / "benchmarks" / "gpu_check.py"
spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
assert spec and spec.loader
gpu_check = importlib.util.module_from_spec(spec)
sys.modules["gpu_check"] = gpu_check
spec.loader.exec_module(gpu_check)
Ran = gpu_check.Ran


def _result(size: int, wrong: int = 0) -> BenchResult:
    return BenchResult(collective="all_reduce", size_bytes=size, count=size // 4,
                       dtype="float", op="sum", root=-1, in_place=True, world_size=2, iters=5,
                       time_us=10.0, time_us_p50=10.0, time_us_p95=11.0, time_us_min=9.0,
                       time_us_max=12.0, algbw_gbs=1.0, busbw_gbs=1.0, wrong=wrong)


def bench_stdout(ranks: int, sizes: Sequence[int], wrong: int = 0, note: str = "") -> str:
    lines = device_block([DeviceLine(r, 100 + r, "node0", r, f"0000:0{r}:00.0", "MI300X")
                          for r in range(ranks)])
    if note:
        lines.append(note)
    lines += column_header()
    lines += [row(None, _result(size, wrong)) for size in sizes]
    return "\n".join(lines) + "\n"


class FakeCollscope:
    """Answers gpu_check's commands as collscope does on a healthy node with ``gpus`` GPUs."""

    def __init__(self, gpus: int, wrong: int = 0, free_bytes: int = 4 << 30):
        self.gpus, self.wrong, self.free = gpus, wrong, free_bytes
        self.calls: list[list[str]] = []

    def __call__(self, args: Sequence[str], timeout: float) -> Ran:
        args = list(args)
        self.calls.append(args)
        command = args[0]
        if command == "bench":
            ranks = int(args[args.index("--nproc") + 1])
            try:
                check_ranks_fit(ranks, self.gpus, "nccl", "--nproc")
            except UsageError as error:
                return Ran(2, "", f"collscope bench: {error}\n")
            if "8G" in args:
                cap = (int(self.free * 0.8) - 80 * 1024**2) // 2
                return Ran(0, bench_stdout(1, [1 << 30] if cap < 8 << 30 else [1 << 30, 8 << 30],
                                           note=f"# Reducing maxBytes to {cap} due to memory "
                                                "limitation"), "")
            return Ran(0, bench_stdout(ranks, [8, 64, 512], self.wrong), "")
        if command == "train":
            record = {"kind": "train", "step_time_ms": 12.5, "loss_first": 8.3,
                      "loss_last": 5.1, "peak_memory_bytes": 900 << 20,
                      "estimated_memory_bytes": 1000 << 20,
                      "timing": "device events between phases on the compute stream"}
            Path(args[args.index("--json") + 1]).write_text(
                json.dumps({"kind": "run"}) + "\n" + json.dumps(record) + "\n")
            return Ran(0, "[1/1] ...\n", "")
        if command == "overlap":
            return Ran(0, "  t_both 1.0 ms\n  overlap efficiency 0.93  (the shorter one hides "
                          "completely)\n", "")
        if command == "monitor":
            samples = [{"kind": "sample", "metrics": {"gpu.0.util_percent": 3.0,
                                                      "gpu.0.mem_used_bytes": 2.1e9,
                                                      "gpu.0.mem_total_bytes": 205.8e9}}] * 5
            Path(args[args.index("--json") + 1]).write_text(
                "\n".join(json.dumps(s) for s in [{"kind": "run"}, *samples]) + "\n")
            return Ran(0, "", "")
        if command == "doctor":
            return Ran(0, json.dumps({"findings": [], "inventory": {
                "gpus": [{"index": i} for i in range(self.gpus)]}}), "")
        raise AssertionError(args)


def good_measure(sizes: Sequence[int]) -> list[tuple[int, float, float]]:
    return [(size, 0.100, 0.102) for size in sizes]


def test_without_a_gpu_it_says_skipped_and_exits_0():
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          timeout=60, env=cli_env(), cwd=REPO)
    assert (proc.returncode, proc.stdout) == (0, "no GPU: skipped\n")


def test_every_item_passes_on_a_healthy_two_gpu_node(capsys):
    fake = FakeCollscope(gpus=2)
    assert gpu_check.main([], run=fake, gpus=2, measure=good_measure) == 0
    lines = capsys.readouterr().out.splitlines()
    items = [line.split()[1] for line in lines[:-1]]
    assert items == ["binding", "bench-1", "bench-2", "event-vs-wall", "memory-cap", "train",
                     "overlap", "monitor", "doctor"]
    assert all(line.startswith("PASS") for line in lines[:-1]), lines
    assert lines[-1].startswith("9/9 items without failure")
    # bench ran in every mode the issue names, with the check on.
    modes = {tuple(c[c.index("-c") + 2:]) for c in fake.calls if "-c" in c}
    assert modes == {(), ("-z", "1"), ("-a", "0"), ("-a", "2"), ("-a", "3")}


def test_one_gpu_skips_two_ranks_and_a_small_gpu_reports_the_cap(capsys):
    fake = FakeCollscope(gpus=1, free_bytes=16 << 30)
    assert gpu_check.main([], run=fake, gpus=1, measure=good_measure) == 0
    out = capsys.readouterr().out
    assert "SKIP  bench-2" in out and "refuse two ranks on one GPU" in out
    assert "Reducing maxBytes to" in out


@pytest.mark.parametrize("breakage, items", [
    ("wrong", ["bench-1", "bench-2"]), ("events", ["event-vs-wall"]), ("monitor", ["monitor"])])
def test_failures_are_named_and_exit_1(capsys, monkeypatch, breakage, items):
    fake = FakeCollscope(gpus=2, wrong=3 if breakage == "wrong" else 0)
    measure = good_measure
    if breakage == "events":
        def measure(sizes):  # noqa: F811 (events 20% short of the wall clock)
            return [(size, 0.080, 0.100) for size in sizes]
    if breakage == "monitor":
        monkeypatch.setattr(gpu_check, "check_monitor",
                            lambda run, timeout, workdir: gpu_check.judge_monitor(
                                [{"metrics": {"gpu.0.util_percent": 250.0}}]))
    assert gpu_check.main([], run=fake, gpus=2, measure=measure) == 1
    failed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL")]
    assert [line.split()[1] for line in failed] == items


def test_event_vs_wall_judges_only_sizes_from_16_mib():
    verdict = gpu_check.judge_event_vs_wall([(1 << 20, 0.05, 0.10), (16 << 20, 0.095, 0.1)])
    assert verdict.status == "PASS" and "16 MiB events/wall 0.950" in verdict.detail


def test_a_wrong_out_of_place_result_fails_and_every_collective_is_checked():
    """Both #wrong columns are read (N/A skipped): a bad out-of-place count with a clean
    in-place one fails; the default mode runs every collective (sendrecv from 2 ranks)."""
    good, bad = _result(8), _result(8, wrong=2)
    out_of_place_bad = bench_stdout(2, []) + row(
        msgspec.structs.replace(bad, collective="all_gather", in_place=False), good) + "\n"
    calls: list[list[str]] = []

    def fake(args, timeout):
        calls.append(list(args))
        return Ran(0, out_of_place_bad, "")

    verdict = gpu_check.check_bench(fake, 2, 2, 60)
    assert verdict.status == "FAIL" and "1 with #wrong != 0" in verdict.detail
    assert calls[0][1:calls[0].index("--nproc")] == list(gpu_check.EVERY_COLLECTIVE)
    assert gpu_check.bench_collectives("default", 1)[-1] == "reduce"     # no sendrecv alone
    assert gpu_check.wrong_cells(row(None, _result(8)).split()) == ["0"]
