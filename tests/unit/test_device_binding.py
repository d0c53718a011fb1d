"""Ranks vs GPUs: more ranks on a node than visible GPUs is bad input, said in one line."""

from __future__ import annotations

import threading

import pytest
import torch

from collscope.errors import UsageError
from collscope.runtime import dist as rdist
from collscope.runtime import entry
from tests.unit.cuda_fakes import FakeGpu


def test_check_ranks_fit_names_ranks_gpus_and_the_way_out():
    rdist.check_ranks_fit(2, 2, "nccl", "--nproc")
    rdist.check_ranks_fit(8, 2, "gloo", "--nproc")     # gloo ranks stay on the CPU
    rdist.check_ranks_fit(8, 0, "nccl", "--nproc")     # resolve_backend already refuses it
    with pytest.raises(UsageError) as error:
        rdist.check_ranks_fit(4, 2, "nccl", "--nproc")
    text = str(error.value)
    assert text.startswith("--nproc: 4 ranks per node but 2 GPU(s) visible")
    assert "at most 2 ranks per node" in text and "--backend gloo" in text


def test_bind_device_refuses_a_shared_gpu_under_a_launcher(monkeypatch):
    FakeGpu().install(monkeypatch, devices=2)
    assert rdist.bind_device("nccl", 1, 2, environ={}) == torch.device("cuda", 1)
    with pytest.raises(UsageError, match="LOCAL_WORLD_SIZE: 4 ranks per node but 2 GPU"):
        rdist.bind_device("nccl", 3, 4, environ={})
    assert rdist.bind_device("gloo", 3, 4, environ={}) == torch.device("cpu")


def test_bind_device_refuses_a_shared_gpu_when_slurm_shows_every_gpu(monkeypatch):
    # Slurm sets CUDA_VISIBLE_DEVICES to all GPUs of the allocation, shared by all its ranks:
    # 4 ranks on 2 GPUs would put two ranks on each, so the variable excuses nothing.
    FakeGpu().install(monkeypatch, devices=2)
    with pytest.raises(UsageError, match="LOCAL_WORLD_SIZE: 4 ranks per node but 2 GPU"):
        rdist.bind_device("nccl", 3, 4, environ={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert rdist.bind_device("nccl", 1, 2, environ={"CUDA_VISIBLE_DEVICES": "0,1"}) == \
        torch.device("cuda", 1)


def test_bind_device_takes_device_0_when_each_rank_sees_its_own_gpu(monkeypatch):
    # srun --gpus-per-task=1: each rank sees one GPU, its own, as device 0.
    FakeGpu().install(monkeypatch, devices=1)
    assert rdist.bind_device("nccl", 3, 4, environ={"CUDA_VISIBLE_DEVICES": "3"}) == \
        torch.device("cuda", 0)
    # Without the variable one GPU really is shared by the node's ranks.
    with pytest.raises(UsageError, match="LOCAL_WORLD_SIZE: 4 ranks per node but 1 GPU"):
        rdist.bind_device("nccl", 3, 4, environ={})


def test_process_group_setup_failure_is_one_rank_failure_line(monkeypatch):
    from collscope.errors import RankFailure
    from collscope.runtime.launchers import LaunchInfo

    def refuse(*args, **kwargs):
        raise rdist.dist.DistStoreError(
            "[/torch/csrc/distributed/c10d/TCPStore.cpp:106] The client socket has timed out "
            "after 5000ms while trying to connect to (10.0.0.9, 29511).\nsecond line")

    monkeypatch.setattr(rdist.dist, "init_process_group", refuse)
    monkeypatch.setattr(rdist, "resolve_backend", lambda requested: "gloo")
    monkeypatch.setenv("MASTER_ADDR", "")   # start() sets both; the test restores them
    monkeypatch.setenv("MASTER_PORT", "")
    launch = LaunchInfo("torchrun", 1, 2, 1, 2, None, "10.0.0.9", 29511)
    with pytest.raises(RankFailure) as failure:
        rdist.start(launch, "gloo", 5.0)
    assert str(failure.value) == (
        "rank 1: process group setup (rendezvous at 10.0.0.9:29511) failed: The client "
        "socket has timed out after 5000ms while trying to connect to (10.0.0.9, 29511).")
    # The failed set-up's watchdog is gone with it (a thread left alive stops later forks).
    assert "collscope-watchdog" not in {thread.name for thread in threading.enumerate()}


def test_standalone_spawn_refuses_more_ranks_than_gpus_before_starting_any(monkeypatch):
    FakeGpu().install(monkeypatch, devices=2)
    monkeypatch.setattr("collscope.runtime.torch_required.cpu_only_build", lambda: False)
    monkeypatch.setattr(rdist, "resolve_backend", lambda requested: "nccl")
    started = []
    monkeypatch.setattr("collscope.runtime.spawn.spawn_local",
                        lambda *args: started.append(args) or 0)
    job = entry.Job("bench", "auto", 5.0, 4, lambda world, backend: None,
                    lambda session, launcher: 0)
    with pytest.raises(UsageError, match="--nproc: 4 ranks per node but 2 GPU"):
        entry._spawn(job, ["bench"])
    assert started == []
