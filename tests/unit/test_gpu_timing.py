"""GPU timing on a fake device shaped like torch.cuda: each -z time is the op's device time,
back-to-back times are the device's, and nothing sleeps inside a timed interval."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from collscope.bench.config import BenchConfig
from collscope.bench.runner import Runner, max_bytes_for
from tests.unit.cuda_fakes import US, FakeGpu

OP_S = 20 * US   # a small all_reduce on xGMI/NVLink


def _runner(blocking: bool) -> Runner:
    beats: list[int] = []
    watchdog = SimpleNamespace(beat=lambda: beats.append(1), step=None)
    session = SimpleNamespace(rank=0, world_size=2, device=torch.device("cuda", 0),
                              watchdog=watchdog, layout=SimpleNamespace(ranks_per_node=2))
    return Runner(BenchConfig(blocking=blocking, max_bytes=1024), session)  # type: ignore


@pytest.mark.parametrize("blocking", [True, False])
def test_each_iteration_is_the_ops_device_time(monkeypatch, blocking):
    gpu = FakeGpu()
    gpu.install(monkeypatch)
    runner = _runner(blocking)
    loop, per_iter = runner._timed_loop_body(lambda: gpu.launch(OP_S), 10)
    assert per_iter == pytest.approx([OP_S] * 10, abs=1e-9)
    assert loop == pytest.approx(10 * OP_S, abs=1e-9)
    assert gpu.sleeps == []   # no sleeping inside (or around) a timed interval


def test_blocking_waits_are_not_slowed_by_host_wake_up(monkeypatch):
    """The host is slow to wake and to launch; the device times do not see it."""
    gpu = FakeGpu(wake_latency_s=500 * US, launch_cost_s=50 * US)
    gpu.install(monkeypatch)
    _, per_iter = _runner(True)._timed_loop_body(lambda: gpu.launch(OP_S), 5)
    assert max(per_iter) == pytest.approx(OP_S, abs=1e-9)


def test_size_cap_on_a_40gb_gpu_leaves_room_for_the_check(monkeypatch):
    gpu = FakeGpu(free_bytes=40 * 1000**3)
    gpu.install(monkeypatch)
    session = SimpleNamespace(device=torch.device("cuda", 0))
    wanted = BenchConfig()          # default 4 GiB on GPUs
    alone = lambda fits: fits  # noqa: E731 (one rank: its own budget is the agreed one)
    assert max_bytes_for(wanted, session, alone) == (4 * 1024**3, None)  # type: ignore[arg-type]
    big = BenchConfig(max_bytes=32 * 1024**3)
    cap, note = max_bytes_for(big, session, alone)  # type: ignore[arg-type]
    from collscope.collectives.ops import CHECK_WORKSPACE_BYTES

    assert cap == (int(40 * 1000**3 * 0.8) - CHECK_WORKSPACE_BYTES) // 2
    assert note == f"# Reducing maxBytes to {cap} due to memory limitation"


def test_every_rank_sizes_the_sweep_from_the_smallest_free_memory(monkeypatch):
    """Rank 0 has 40 GB free, another rank 10 GB: both plan the 10 GB rank's cap (a MIN
    all_reduce of the budgets), and the note prints the agreed value."""
    from collscope.bench.runner import buffer_budget

    gpu = FakeGpu(free_bytes=40 * 1000**3)
    gpu.install(monkeypatch)
    runner = _runner(False)
    other = buffer_budget(10 * 1000**3, True)
    reductions: list[object] = []

    def all_reduce(values, op):        # this rank's budget against the other rank's
        reductions.append(op)
        return [min(values[0], float(other))]

    monkeypatch.setattr(runner, "_reduce_flags", all_reduce)
    config = BenchConfig(max_bytes=32 * 1024**3)
    cap, note = max_bytes_for(config, runner.session, runner.agree_min)
    assert reductions == [torch.distributed.ReduceOp.MIN]
    assert cap == other < buffer_budget(40 * 1000**3, True)
    assert note == f"# Reducing maxBytes to {other} due to memory limitation"
    # Ranks agree even when the request fits everywhere (every rank calls the all_reduce).
    assert max_bytes_for(BenchConfig(max_bytes=1024), runner.session,
                         runner.agree_min) == (1024, None)
    assert len(reductions) == 2


def test_per_rank_clock_makes_its_events_before_the_loop(monkeypatch):
    from collscope.bench.per_rank import OpClock

    gpu = FakeGpu()
    gpu.install(monkeypatch)
    made: list[int] = []
    event = torch.cuda.Event

    def counting_event(*args, **kwargs):
        made.append(1)
        return event(*args, **kwargs)

    monkeypatch.setattr(torch.cuda, "Event", counting_event)
    clock = OpClock(torch.device("cuda", 0), keep=4)
    assert len(made) == 8                        # keep pairs, made up front
    durations = [OP_S * (i + 1) for i in range(6)]
    launch = iter(durations)
    timed = clock.wrap(lambda: gpu.launch(next(launch)))
    for _ in durations:
        timed()
    torch.cuda.synchronize()
    assert len(made) == 8                        # none made inside the timed loop
    assert clock.times() == pytest.approx(durations[-4:], abs=1e-9)   # the last 4, in order
