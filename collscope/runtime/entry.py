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
from typing import TYPE_CHECKING, Any

from collscope.errors import ExitCode, RankFailure, UsageError
from collscope.runtime.launchers import LaunchInfo, detect_launcher
from collscope.runtime.spawn import SPAWNED_ENV

if TYPE_CHECKING:    # the parent of local ranks need not import torch (_backend_and_gpus)
    from collscope.runtime.dist import Session


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
    # That the outputs can be written (raises UsageError naming the flag and the path), made
    # only where they will be written: by the parent before spawning local ranks, else once
    # the group exists by rank 0 (output_check: rank 0's files) and by each node's local
    # rank 0 (node_output_check: files every node writes, such as per-rank traces, where a
    # path may exist on one host only); every rank then exits 2 together and rank 0 says
    # why, once.
    output_check: Callable[[], None] | None = None
    node_output_check: Callable[[], None] | None = None

    def output_checks(self, rank: int, local_rank: int) -> list[Callable[[], None]]:
        """The checks this process makes: rank 0's files on rank 0, a node's files on its
        local rank 0 (the parent of local ranks is both)."""
        checks = [(self.output_check, rank == 0), (self.node_output_check, local_rank == 0)]
        return [check for check, mine in checks if check is not None and mine]


def launch_or_spawn(job: Job, argv: Sequence[str]) -> int:
    spawned = os.environ.get(SPAWNED_ENV) == "1"
    launch = detect_launcher(os.environ)
    if launch is not None:
        if job.nproc is not None and not spawned:
            raise UsageError(f"--nproc: ranks come from {launch.launcher} here; drop --nproc")
        # Spawned by collscope: the parent checked the outputs before starting this rank.
        return run_rank(job, launch, "local" if spawned else launch.launcher,
                        outputs_checked=spawned)
    return _spawn(job, argv)


def _spawn(job: Job, argv: Sequence[str]) -> int:
    from collscope.runtime.spawn import spawn_local

    if job.nproc is not None and job.nproc < 1:
        raise UsageError(f"--nproc: {job.nproc} must be >= 1")
    for check in job.output_checks(0, 0):   # one process, before any rank starts
        check()
    backend, gpus = _backend_and_gpus(job.backend)
    nproc = job.nproc or (gpus if backend in ("nccl", "ucc") else 0) or 2
    if gpus:
        from collscope.runtime.dist import check_ranks_fit

        check_ranks_fit(nproc, gpus, backend, "--nproc")
    job.validate(nproc, backend)
    if job.host_preflight is not None:
        job.host_preflight(nproc, backend)
    return spawn_local(nproc, argv, job.timeout_s)


def _backend_and_gpus(requested: str) -> tuple[str, int]:
    """The backend the local ranks will use and the GPUs they see. With a CPU-only torch build
    and gloo (or auto) that is known without importing torch in this parent process (each
    rank imports it anyway, and checks the backend again as it joins)."""
    from collscope.runtime.torch_required import cpu_only_build, unimportable

    if requested in ("auto", "gloo") and cpu_only_build():
        return "gloo", 0
    try:
        from collscope.runtime.dist import gpu_count, resolve_backend
    except ImportError as error:
        raise unimportable(error) from None
    return resolve_backend(requested), gpu_count()


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


def _outputs_checked_together(job: Job, session: Session) -> bool:
    """The writer rank(s) check the outputs, every rank learns the outcome; True when fine.

    Only the ranks that write check: under a multi-node launcher a path may exist on rank 0's
    host only, and N ranks probing one shared file system prove nothing more. The outcome is
    shared through the group (all_gather_object of each writer's message), so on failure no
    rank is left waiting for a peer that gave up: all leave together with exit 2, and rank 0
    prints the line (once, naming the hosts when per-node writers differ)."""
    import torch.distributed as dist

    from collscope.runtime.guard import guard

    problem = None
    for check in job.output_checks(session.rank, session.launch.local_rank):
        try:
            check()
        except UsageError as error:
            problem = str(error)
            break
    host = session.layout.devices[session.rank]["host"]
    problems: list[Any] = [None] * session.world_size
    with guard(session, "output check agreement (all_gather_object)"):
        dist.all_gather_object(problems, (host, problem))
    message = agreed_problem(problems, named_hosts=job.node_output_check is not None and
                             session.layout.nodes > 1)
    if message is None:
        return True
    session.leave_together()
    if session.rank != 0:
        return False
    raise UsageError(message)


def agreed_problem(problems: Sequence[tuple[str, str | None]], named_hosts: bool) -> str | None:
    """The one line for every writer's (host, problem or None); None when all could write.
    The same message from several writers (one shared file system) is said once; with
    per-node writers the hosts that failed are named."""
    failed = [(host, message) for host, message in problems if message]
    if not failed:
        return None
    line = "; ".join(dict.fromkeys(message for _, message in failed))
    if named_hosts:
        line += f" (on {', '.join(dict.fromkeys(host for host, _ in failed))})"
    return line


def run_rank(job: Job, launch: LaunchInfo, launcher_name: str,
             outputs_checked: bool = False) -> int:
    """The life of one rank: join the group, validate, check the outputs, run the body, leave.
    ``outputs_checked``: the outputs were checked before this rank started (spawned ranks).
    What the backend's libraries print to descriptor 1 goes to stderr (runtime.stdio), so
    stdout carries the command's own output only (`--json -` stays JSON)."""
    from collscope.runtime.stdio import libraries_to_stderr

    with libraries_to_stderr():
        return _rank_life(job, launch, launcher_name, outputs_checked)


def _rank_life(job: Job, launch: LaunchInfo, launcher_name: str, outputs_checked: bool) -> int:
    from collscope.runtime.dist import start

    try:
        session = start(launch, job.backend, job.timeout_s)
    except UsageError:
        if launch.local_rank != 0:
            return ExitCode.USAGE  # every local rank fails alike; local rank 0 says it once
        raise
    try:
        try:
            job.validate(session.world_size, session.backend)
        except UsageError:
            if session.rank != 0:
                return ExitCode.USAGE  # every rank fails the same check; rank 0 says it once
            raise
        if (job.output_check or job.node_output_check) and not outputs_checked and \
                not _outputs_checked_together(job, session):
            return ExitCode.USAGE
        if job.rank_preflight is not None and not _preflight_together(job, session):
            return ExitCode.USAGE
        code = job.body(session, launcher_name)
        session.leave_together()
        return code
    except RankFailure as failure:
        # Peers may be dead: skip the orderly teardown (it could block) and exit now; results
        # were flushed as they were measured.
        sys.stderr.write(f"collscope {job.command}: {failure}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(ExitCode.FOUND)
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
