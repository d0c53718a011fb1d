"""Ranks vs GPUs: more ranks on a node than visible GPUs is bad input, said in one line."""

from __future__ import annotations

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
    # srun --gpus-per-task=1: each rank sees its own GPU as device 0.
    assert rdist.bind_device("nccl", 3, 4, environ={"CUDA_VISIBLE_DEVICES": "3"}) == \
        torch.device("cuda", 1)
    assert rdist.bind_device("gloo", 3, 4, environ={}) == torch.device("cpu")


def test_standalone_spawn_refuses_more_ranks_than_gpus_before_starting_any(monkeypatch):
    FakeGpu().install(monkeypatch, devices=2)
    monkeypatch.setattr(rdist, "resolve_backend", lambda requested: "nccl")
    started = []
    monkeypatch.setattr("collscope.runtime.spawn.spawn_local",
                        lambda *args: started.append(args) or 0)
    job = entry.Job("bench", "auto", 5.0, 4, lambda world, backend: None,
                    lambda session, launcher: 0)
    with pytest.raises(UsageError, match="--nproc: 4 ranks per node but 2 GPU"):
        entry._spawn(job, ["bench"])
    assert started == []
