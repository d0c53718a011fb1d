"""Which launcher started this process, and where this rank sits in the job.

Pure functions of the environment (a dict), so every launcher is testable without launching.
Supported: torchrun (torch.distributed.run), Slurm srun, Open MPI mpirun, MPICH / Intel MPI
(PMI), and none (collscope spawns local ranks itself).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from collscope.errors import UsageError

DEFAULT_PORT = 29500


@dataclass(frozen=True)
class LaunchInfo:
    """This rank's place in the job, as the launcher describes it."""

    launcher: str                 # torchrun, slurm, openmpi, pmi
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int | None         # None when the launcher does not say (then hosts decide)
    master_addr: str
    master_port: int


def expand_nodelist(nodelist: str) -> list[str]:
    """Expand a Slurm hostlist: ``gpu[01-04,07],login2`` -> gpu01..gpu04, gpu07, login2.

    Handles several bracket groups per name (``rack[1-2]-n[01-02]``) and keeps zero padding.
    """
    hosts: list[str] = []
    for item in _split_top_level(nodelist.strip()):
        if item:
            hosts.extend(_expand_one(item))
    return hosts


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _expand_one(item: str) -> list[str]:
    match = re.search(r"\[([^\]]*)\]", item)
    if not match:
        return [item]
    prefix, suffix = item[: match.start()], item[match.end():]
    expanded = []
    for piece in match.group(1).split(","):
        if "-" in piece:
            low, high = piece.split("-", 1)
            width = len(low)
            if not (low.isdigit() and high.isdigit()) or int(high) < int(low):
                raise UsageError(f"SLURM nodelist: cannot expand range '{piece}' in '{item}'")
            numbers = [str(n).zfill(width) for n in range(int(low), int(high) + 1)]
        else:
            numbers = [piece]
        for number in numbers:
            expanded.extend(_expand_one(prefix + number + suffix))
    return expanded


def _int(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    value = env.get(name)
    if value is None or value == "":
        if default is None:
            raise UsageError(f"launcher environment: {name} is not set")
        return default
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"launcher environment: {name}={value!r} is not an integer") from None


def _first_int(env: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        if env.get(name, "").strip().lstrip("-").isdigit():
            return int(env[name])
    return None


def _slurm_tasks_per_node(value: str) -> int | None:
    """First count of SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE, e.g. '8(x2),4' -> 8."""
    match = re.match(r"\s*(\d+)", value or "")
    return int(match.group(1)) if match else None


def _master(env: Mapping[str, str], fallback_host: str | None, launcher: str) -> tuple[str, int]:
    addr = env.get("MASTER_ADDR") or fallback_host
    if not addr:
        raise UsageError(
            f"{launcher}: MASTER_ADDR is not set and cannot be derived; export it on every rank "
            "(e.g. mpirun -x MASTER_ADDR=<first host> -x MASTER_PORT=29500)"
        )
    return addr, _int(env, "MASTER_PORT", DEFAULT_PORT)


def detect_launcher(env: Mapping[str, str]) -> LaunchInfo | None:
    """The launcher that started this process, or None when started by hand.

    Order matters: torchrun sets RANK inside Slurm/MPI jobs too, and Open MPI or PMI variables
    beat Slurm's when mpirun runs inside an allocation.
    """
    if "RANK" in env and "WORLD_SIZE" in env and ("LOCAL_RANK" in env or "MASTER_ADDR" in env):
        world = _int(env, "WORLD_SIZE")
        local_world = _int(env, "LOCAL_WORLD_SIZE", world)
        addr, port = _master(env, "127.0.0.1" if local_world == world else None, "torchrun")
        return LaunchInfo("torchrun", _int(env, "RANK"), world, _int(env, "LOCAL_RANK", 0),
                          local_world, _first_int(env, "GROUP_RANK", "NODE_RANK"), addr, port)

    if "OMPI_COMM_WORLD_RANK" in env:
        world = _int(env, "OMPI_COMM_WORLD_SIZE")
        local_world = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", world)
        addr, port = _master(env, _slurm_first_host(env) or
                             ("127.0.0.1" if local_world == world else None), "openmpi")
        # No node index: OMPI_COMM_WORLD_NODE_RANK is this process's rank on its node across
        # all jobs (mpirun(1)), not which node it is, so host names decide the nodes.
        return LaunchInfo("openmpi", _int(env, "OMPI_COMM_WORLD_RANK"), world,
                          _int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0), local_world, None,
                          addr, port)

    if "PMI_RANK" in env and "PMI_SIZE" in env:
        world = _int(env, "PMI_SIZE")
        local_world = _first_int(env, "MPI_LOCALNRANKS", "PALS_LOCAL_SIZE") or world
        addr, port = _master(env, _slurm_first_host(env) or
                             ("127.0.0.1" if local_world == world else None), "pmi")
        local_rank = _first_int(env, "MPI_LOCALRANKID", "PALS_LOCAL_RANKID")
        rank = _int(env, "PMI_RANK")
        return LaunchInfo("pmi", rank, world, rank if local_rank is None else local_rank,
                          local_world, None, addr, port)

    if "SLURM_PROCID" in env and ("SLURM_STEP_NUM_TASKS" in env or "SLURM_NTASKS" in env):
        world = _first_int(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS") or 1
        per_node = _slurm_tasks_per_node(env.get("SLURM_STEP_TASKS_PER_NODE")
                                         or env.get("SLURM_TASKS_PER_NODE", ""))
        job_id = _first_int(env, "SLURM_JOB_ID", "SLURM_JOBID") or 0
        # A port derived from the job id lets two jobs share a node without colliding.
        default_port = 20000 + job_id % 10000
        first_host = env.get("MASTER_ADDR") or _slurm_first_host(env)
        if not first_host:
            raise UsageError("slurm: neither MASTER_ADDR nor SLURM_STEP_NODELIST/"
                             "SLURM_JOB_NODELIST is set")
        port = _int(env, "MASTER_PORT", default_port)
        return LaunchInfo("slurm", _int(env, "SLURM_PROCID"), world,
                          _int(env, "SLURM_LOCALID", 0), per_node or world,
                          _first_int(env, "SLURM_NODEID"), first_host, port)
    return None


def _slurm_first_host(env: Mapping[str, str]) -> str | None:
    nodelist = (env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
                or env.get("SLURM_NODELIST"))
    if not nodelist:
        return None
    hosts = expand_nodelist(nodelist)
    return hosts[0] if hosts else None
