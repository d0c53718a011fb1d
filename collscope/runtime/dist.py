"""Process-group setup and teardown on torch.distributed, device binding and job layout."""

from __future__ import annotations

import datetime
import os
import socket
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch
import torch.distributed as dist

from collscope.errors import UsageError
from collscope.runtime.guard import guard
from collscope.runtime.launchers import LaunchInfo
from collscope.runtime.watchdog import Watchdog
from collscope.testing import faults
from collscope.versions import library_versions  # noqa: F401  (its one definition; re-exported)

BACKENDS = ("auto", "nccl", "gloo", "mpi", "ucc")


def gpu_count() -> int:
    """Visible GPUs (CUDA or ROCm/HIP builds of torch); 0 on CPU-only builds."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def is_rocm() -> bool:
    return bool(getattr(torch.version, "hip", None))


def available_backends() -> list[str]:
    checks = {"nccl": dist.is_nccl_available, "gloo": dist.is_gloo_available,
              "mpi": dist.is_mpi_available, "ucc": dist.is_ucc_available}
    return [name for name, check in checks.items() if check()]


def resolve_backend(requested: str) -> str:
    """The torch backend name for ``--backend``; auto = nccl with GPUs, else gloo."""
    if requested not in BACKENDS:
        raise UsageError(f"--backend: unknown backend '{requested}'; "
                         f"accepted: {', '.join(BACKENDS)}")
    have = available_backends()
    backend = ("nccl" if gpu_count() > 0 and "nccl" in have else "gloo") \
        if requested == "auto" else requested
    if backend not in have:
        raise UsageError(f"--backend: {backend} is not available in this torch build "
                         f"({torch.__version__}); available: {', '.join(have) or 'none'}")
    if backend == "nccl" and gpu_count() == 0:
        raise UsageError("--backend: nccl needs a visible GPU and none is visible; use gloo")
    return backend


def backend_label(backend: str) -> str:
    """What to call the backend in output: NCCL on ROCm builds is RCCL."""
    return "rccl" if backend == "nccl" and is_rocm() else backend


@dataclass
class Layout:
    """Where every rank runs, gathered once at start."""

    hosts: list[str]
    nodes: int
    ranks_per_node: int
    devices: list[dict[str, Any]] = field(default_factory=list)  # one per rank, rank order


def gather_layout(launch: LaunchInfo, device: torch.device,
                  group: dist.ProcessGroup | None = None) -> Layout:
    """All ranks exchange host, node and device once; every rank gets the same Layout.

    Nodes come from the launcher's node rank when it gives one (two emulated "nodes" on one
    machine share a host name), otherwise from host names.
    """
    me = {
        "rank": launch.rank,
        "host": socket.gethostname(),
        "node_rank": launch.node_rank,
        "local_rank": launch.local_rank,
        "device": device.index if device.type != "cpu" else None,
        "device_type": device.type,
        "name": (torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"),
        "pid": os.getpid(),
    }
    everyone: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(everyone, me, group=group)
    by_node: dict[Any, int] = {}
    for entry in everyone:
        key = entry["node_rank"] if all(e["node_rank"] is not None for e in everyone) \
            else entry["host"]
        by_node[key] = by_node.get(key, 0) + 1
        entry["node"] = list(by_node).index(key)
    hosts = list(dict.fromkeys(entry["host"] for entry in everyone))
    return Layout(hosts=hosts, nodes=len(by_node), ranks_per_node=max(by_node.values()),
                  devices=everyone)


@dataclass
class Session:
    """An initialised process group and what collscope knows about it."""

    launch: LaunchInfo
    backend: str            # torch backend name
    device: torch.device
    layout: Layout
    watchdog: Watchdog
    timeout_s: float
    owns_group: bool        # False when the user initialised the group (library use)

    @property
    def rank(self) -> int:
        return self.launch.rank

    @property
    def world_size(self) -> int:
        return self.launch.world_size

    @property
    def label(self) -> str:
        return backend_label(self.backend)

    def leave_together(self) -> None:
        """Barrier before teardown: a gloo rank that destroys its group while a peer is still
        inside its last collective (or rank 0 still writing) can abort at exit."""
        if self.owns_group:
            with self.watchdog.step("final barrier"):
                dist.barrier()

    def close(self) -> None:
        global owned_group_closed
        self.watchdog.close()
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()
            owned_group_closed = True


# Set once this process has closed a group it started (spawn.leave_process reads it): a rank
# that ends by interpreter finalization after that can abort, see there.
owned_group_closed = False


VISIBLE_DEVICE_VARIABLES = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def check_ranks_fit(ranks_per_node: int, gpus: int, backend: str, where: str) -> None:
    """NCCL/RCCL need one GPU per rank: more ranks on a node than visible GPUs is bad input
    (two ranks sharing a GPU hang or serialise in the communicator), not a silent share."""
    if backend not in ("nccl", "ucc") or gpus == 0 or ranks_per_node <= gpus:
        return
    raise UsageError(f"{where}: {ranks_per_node} ranks per node but {gpus} GPU(s) visible "
                     f"({' / '.join(VISIBLE_DEVICE_VARIABLES)}); {backend} needs one GPU per "
                     f"rank: run at most {gpus} ranks per node, or use --backend gloo")


def bind_device(backend: str, local_rank: int, local_world_size: int | None = None,
                environ: dict[str, str] | None = None) -> torch.device:
    """Each rank drives GPU LOCAL_RANK; gloo ranks stay on CPU.

    More ranks on the node than GPUs this rank sees is a UsageError (check_ranks_fit), with or
    without a visible-devices variable (Slurm sets CUDA_VISIBLE_DEVICES to every GPU of the
    allocation, shared by all its ranks). One exception: a launcher that binds each rank to its
    own GPU (srun --gpus-per-task=1) sets the variable and leaves exactly one visible GPU per
    rank; that rank takes device 0.
    """
    variables = os.environ if environ is None else environ
    gpus = gpu_count()
    if backend in ("nccl", "ucc") and gpus > 0:
        ranks = max(local_world_size or 0, local_rank + 1)
        own_gpu = gpus == 1 and any(name in variables for name in VISIBLE_DEVICE_VARIABLES)
        if own_gpu:
            device = torch.device("cuda", 0)
        else:
            check_ranks_fit(ranks, gpus, backend, "LOCAL_WORLD_SIZE")
            device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        return device
    return torch.device("cpu")


def start(launch: LaunchInfo, requested_backend: str, timeout_s: float) -> Session:
    """Initialise the process group for this rank and gather the job layout."""
    backend = resolve_backend(requested_backend)
    device = bind_device(backend, launch.local_rank, launch.local_world_size)
    os.environ["MASTER_ADDR"] = launch.master_addr
    os.environ["MASTER_PORT"] = str(launch.master_port)
    watchdog = Watchdog(timeout_s, launch.rank)
    timeout = datetime.timedelta(seconds=timeout_s)
    try:
        # guard: a rendezvous or communicator failure reaches the user as one RankFailure line.
        with guard(SimpleNamespace(watchdog=watchdog, rank=launch.rank),
                   f"process group setup (rendezvous at {launch.master_addr}:"
                   f"{launch.master_port})"):
            if backend == "mpi":
                dist.init_process_group("mpi", timeout=timeout)
            else:
                kwargs: dict[str, Any] = {}
                if device.type == "cuda":
                    kwargs["device_id"] = device  # eager NCCL communicator on the bound GPU
                dist.init_process_group(backend, init_method="env://", rank=launch.rank,
                                        world_size=launch.world_size, timeout=timeout,
                                        **kwargs)
            faults.write_to_fd1(launch.rank)      # test seam: what gloo 2.9 prints here
            layout = gather_layout(launch, device)
    except BaseException:
        # No Session owns the watchdog yet: its thread would outlive a failed set-up (in a
        # library caller's process, and it keeps this process from forking ranks later).
        watchdog.close()
        raise
    return Session(launch, backend, device, layout, watchdog, timeout_s, owns_group=True)


def attach(timeout_s: float = 300.0) -> Session:
    """A Session over a process group the caller already initialised (library use)."""
    if not dist.is_initialized():
        raise RuntimeError("collscope: no process group; call torch.distributed."
                           "init_process_group first, or use `collscope bench` to launch")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    node_rank = os.environ.get("GROUP_RANK")
    launch = LaunchInfo("external", rank, world, local_rank, local_world,
                        int(node_rank) if node_rank and node_rank.isdigit() else None,
                        os.environ.get("MASTER_ADDR", ""), int(os.environ.get("MASTER_PORT", 0)))
    backend = str(dist.get_backend())
    device = (torch.device("cuda", torch.cuda.current_device())
              if backend in ("nccl", "ucc") and gpu_count() > 0 else torch.device("cpu"))
    watchdog = Watchdog(timeout_s, rank)
    with watchdog.step("job layout exchange"):
        layout = gather_layout(launch, device)
    return Session(launch, backend, device, layout, watchdog, timeout_s, owns_group=False)
