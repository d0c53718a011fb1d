"""One way into a distributed command: join the launcher's job, or spawn local ranks.

Every measuring command (bench, train, overlap) runs the same way: under torchrun, srun or
mpirun each process is one rank; started by hand, collscope validates the input first (so bad
input exits 2 before any rank starts) and spawns ``--nproc`` local ranks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from collscope.errors import RankFailure, UsageError
from collscope.runtime.dist import Session
from collscope.runtime.launchers import LaunchInfo, detect_launcher
from collscope.runtime.spawn import SPAWNED_ENV


@dataclass
class Job:
    command: str                                  # subcommand name, for messages
    backend: str                                  # --backend as given (auto, gloo, ...)
    timeout_s: float
    nproc: int | None                             # --nproc as given
    validate: Callable[[int, str], None]          # (world size, backend); raises UsageError
    body: Callable[[Session, str], int]           # (session, launcher name) -> exit code
    # Checks of what the ranks will need (memory), raising UsageError: on the host before
    # spawning local ranks (ranks, backend), and on every rank before the body (session).
    host_preflight: Callable[[int, str], None] | None = None
    rank_preflight: Callable[[Session], None] | None = None


def launch_or_spawn(job: Job, argv: Sequence[str]) -> int:
    spawned = os.environ.get(SPAWNED_ENV) == "1"
    launch = detect_launcher(os.environ)
    if launch is not None:
        if job.nproc is not None and not spawned:
            raise UsageError(f"--nproc: ranks come from {launch.launcher} here; drop --nproc")
        return run_rank(job, launch, "local" if spawned else launch.launcher)
    return _spawn(job, argv)


def _spawn(job: Job, argv: Sequence[str]) -> int:
    from collscope.runtime.dist import check_ranks_fit, gpu_count, resolve_backend
    from collscope.runtime.spawn import spawn_local

    if job.nproc is not None and job.nproc < 1:
        raise UsageError(f"--nproc: {job.nproc} must be >= 1")
    backend = resolve_backend(job.backend)
    nproc = job.nproc or (gpu_count() if backend in ("nccl", "ucc") else 0) or 2
    check_ranks_fit(nproc, gpu_count(), backend, "--nproc")
    job.validate(nproc, backend)
    if job.host_preflight is not None:
        job.host_preflight(nproc, backend)
    return spawn_local(nproc, argv, job.timeout_s)


def end_local_peers(devices: Sequence[dict], rank: int) -> None:
    """SIGKILL the other ranks of a standalone run (all children of one parent, on this host),
    by the pids the job layout gathered at start."""
    import signal

    for entry in devices:
        pid = entry.get("pid")
        if entry.get("rank") != rank and isinstance(pid, int) and pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _preflight_together(job: Job, session: Session) -> bool:
    """Run this rank's pre-flight and agree the outcome with every rank; True when all passed.

    Unlike validate, the pre-flight reads this rank's own device or host, so it can fail on
    one rank only: a rank that left alone would leave its peers blocked in their first
    collective. A failing rank says why on its own line; then every rank exits 2 together."""
    import torch
    import torch.distributed as dist

    from collscope.runtime.guard import guard

    assert job.rank_preflight is not None
    try:
        job.rank_preflight(session)
        failed = 0
    except UsageError as error:
        where = f"rank {session.rank}: " if session.world_size > 1 else ""
        sys.stderr.write(f"collscope {job.command}: {where}{error}\n")
        sys.stderr.flush()
        failed = 1
    flag = torch.tensor([failed], dtype=torch.int32, device=session.device)
    with guard(session, "pre-flight agreement (all_reduce MAX of a failure flag)"):
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    if int(flag.item()) == 0:
        return True
    session.leave_together()
    return False


def run_rank(job: Job, launch: LaunchInfo, launcher_name: str) -> int:
    """The life of one rank: join the group, validate, run the body, leave."""
    from collscope.runtime.dist import start

    try:
        session = start(launch, job.backend, job.timeout_s)
    except UsageError:
        if launch.local_rank != 0:
            return 2  # every local rank fails the same check; local rank 0 says it once
        raise
    try:
        try:
            job.validate(session.world_size, session.backend)
        except UsageError:
            if session.rank != 0:
                return 2  # every rank fails the same check; rank 0 says it once
            raise
        if job.rank_preflight is not None and not _preflight_together(job, session):
            return 2
        code = job.body(session, launcher_name)
        session.leave_together()
        return code
    except RankFailure as failure:
        # Peers may be dead: skip the orderly teardown (it could block) and exit now; results
        # were flushed as they were measured.
        sys.stderr.write(f"collscope {job.command}: {failure}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(1)
    except BrokenPipeError:
        # `collscope bench | head`: the reader has what it wanted. Leave at once, quietly. Local
        # ranks of a standalone run are ended first (before this rank's sockets close, so they
        # do not report a dead peer); under a launcher the peers' own checks end them.
        from collscope.runtime.spawn import PIPE_CLOSED_EXIT_CODE, quiet_closed_stdout

        quiet_closed_stdout()
        if os.environ.get(SPAWNED_ENV) == "1":
            end_local_peers(session.layout.devices, session.rank)
        os._exit(PIPE_CLOSED_EXIT_CODE)
    finally:
        session.close()
