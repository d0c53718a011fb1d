"""A small training loop on gloo that hangs the way real jobs do, for `collscope hang`'s tests.

usage: fr_hang_job.py OUT_DIR LAYOUT NAME [pickle|json|both]   (one rank; RANK, WORLD_SIZE set)
       fr_hang_job.py --all ROOT DEADLINE_S [KEY[:FORMAT]...] [--buffer N|unset]
           (the jobs of JOBS, every one by default: make_dumps; FORMAT overrides the job's
           pickle|json|both; --buffer sets TORCH_FR_BUFFER_SIZE, default 200, ``unset``
           leaves it out as a user who never set it would)
(each rank one process, RANK and WORLD_SIZE set as srun sets them; the ranks meet through a
FileStore in OUT_DIR, so concurrent test jobs need no free port)

LAYOUT ``flat``: each step all_reduce(4096 floats) then broadcast(8) on the world; ``tp4``: a
2 x 4 TP/DP layout built with new_group (TP groups of 4 consecutive ranks, DP groups of
ranks i and i+4), each step all_reduce on TP, then on DP. The fault comes from
The fault comes from COLLSCOPE_FAULT_INJECT (collscope/testing/faults.py: fr-skip, fr-op,
fr-size, fr-die, each @RANK:STEP, at step 3 or later). Once a rank has finished ARMED_AFTER
steps, it dumps its Flight Recorder buffer when its loop makes no progress for STALL_S, from a
background thread as TORCH_NCCL_DUMP_ON_TIMEOUT's dumper does (the main thread is blocked);
arming late keeps a rank starved of CPU on a loaded machine from dumping mid-run. The dump goes
to OUT_DIR/NAME with {rank} and {host} filled in (host: node-01 for the first half of the
ranks, node-02 for the rest): the pickle of _dump_fr_trace, the JSON of _dump_fr_trace_json, or
both (the JSON beside the pickle as NAME.json). The rank then stays (the test ends it once
every live rank has dumped): a rank that left at once would close its connections and gloo
would mark its peers' pending collectives completed before they dump.
"""

from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from collscope.testing.faults import planted

STALL_S = 2.0
STEPS = 6
ARMED_AFTER = 3


def main(out: str, layout: str, name: str, fmt: str) -> None:
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            init_method="file://" + os.path.join(out, ".store"),
                            timeout=datetime.timedelta(seconds=600))  # the test ends it
    groups = [None, None]
    if layout == "tp4":
        tp = [dist.new_group(list(range(g, g + 4))) for g in range(0, world, 4)]
        dp = [dist.new_group([i, i + 4]) for i in range(4)]
        groups = [tp[rank // 4], dp[rank % 4]]
    host = "node-01" if rank < world // 2 else "node-02"
    target = os.path.join(out, name.format(rank=rank, host=host))
    progress = [time.monotonic(), 0.0]        # time of the last step's end, steps done
    threading.Thread(target=_dump_when_stalled, args=(progress, target, fmt),
                     daemon=True).start()
    skip, op, size, die = (planted(kind, rank) for kind in ("fr-skip", "fr-op", "fr-size",
                                                              "fr-die"))
    try:
        for step in range(STEPS):
            tensor = torch.ones(4096)
            if die is not None and step == die.arg:
                os._exit(9)                      # gone without a word, as a crashed rank
            if skip is not None and step == skip.arg:
                time.sleep(600)                  # stuck in Python instead of the collective
            if size is not None and step == size.arg:
                tensor = torch.ones(8192)
            if op is not None and step == op.arg:
                dist.broadcast(tensor, 0, group=groups[0])
            else:
                dist.all_reduce(tensor, group=groups[0])
            if layout == "tp4":
                dist.all_reduce(tensor, group=groups[1])
            else:
                dist.broadcast(torch.ones(8), 0)
            progress[:] = [time.monotonic(), step + 1.0]
    except RuntimeError:
        pass                                     # a peer's failure: the dumper still runs
    time.sleep(600)


def _dump_when_stalled(progress: list[float], target: str, fmt: str) -> None:
    from torch._C._distributed_c10d import _dump_fr_trace, _dump_fr_trace_json

    while progress[1] < ARMED_AFTER or time.monotonic() - progress[0] < STALL_S:
        time.sleep(0.05)
    if fmt in ("pickle", "both"):
        _write(target, _dump_fr_trace())
    if fmt in ("json", "both"):
        _write(target + (".json" if fmt == "both" else ""), _dump_fr_trace_json())


def _write(target: str, data: bytes | str) -> None:
    with open(target + ".tmp", "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)
    os.replace(target + ".tmp", target)          # whole files only, as dumpers do


@dataclass(frozen=True)
class Job:
    world: int
    layout: str
    name: str
    fmt: str
    fault: str
    culprits: tuple[int, ...]          # the ground truth
    cause: str


# One job per fault class (the test and benchmarks/hang_vs_fr_trace.py run them all).
JOBS = {
    "skip": Job(4, "flat", "nccl_trace_rank_{rank}", "both", "fr-skip@2:3", (2,), "not_entered"),
    "op": Job(4, "flat", "nccl_trace_rank_{rank}", "pickle", "fr-op@3:3", (3,), "op_mismatch"),
    "size": Job(4, "flat", "nccl_trace_rank_{rank}", "pickle", "fr-size@1:3", (1,),
                "size_mismatch"),
    "dead": Job(4, "flat", "_dump_{rank}", "pickle", "fr-die@1:3", (1,), "dead_or_unresponsive"),
    "cascade": Job(8, "tp4", "job42_{host}_{rank}", "pickle", "fr-skip@5:3", (5,),
                   "not_entered"),
    "healthy": Job(4, "flat", "nccl_trace_rank_{rank}", "pickle", "", (), "none"),
}


def dump_files(folder: Path, job: Job, rank: int) -> list[Path]:
    host = "node-01" if rank < job.world // 2 else "node-02"
    name = folder / job.name.format(rank=rank, host=host)
    return {"pickle": [name], "json": [name],
            "both": [name, name.with_name(name.name + ".json")]}[job.fmt]


def make_dumps(root: Path, env: dict[str, str], deadline_s: float,
               python: str = sys.executable) -> dict[str, Path]:
    """Every job of JOBS at once under ``root`` (one folder each); a rank is done when it has
    written its dumps or has ended (died, aborted); then the ranks still alive (each blocked
    in its hang) are ended. ``env``: the environment (PYTHONPATH set) the ranks start from.

    One launcher process imports torch once and forks every rank (28 of them): each rank
    importing torch itself costs 1.5-2 s of CPU, most of this on 2 cores."""
    subprocess.run([python, __file__, "--all", str(root), str(deadline_s)], env=env,
                   check=True, timeout=deadline_s + 60)
    return {key: root / key for key in JOBS}


def _launch_all(root: Path, deadline_s: float, jobs: dict[str, Job], buffer: str | None,
                ) -> None:
    """The launcher: fork every rank of ``jobs``, wait as make_dumps says, end the rest."""
    import torch.distributed  # noqa: F401  # imported once, before the forks

    ranks: list[tuple[int, list[Path]]] = []
    for key, job in jobs.items():
        folder = root / key
        folder.mkdir(parents=True)
        for rank in range(job.world):
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    quiet = os.open(os.devnull, os.O_WRONLY)   # gloo's aborts say much
                    os.dup2(quiet, 1)
                    os.dup2(quiet, 2)
                    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(job.world),
                                       "COLLSCOPE_FAULT_INJECT": job.fault})
                    os.environ.pop("TORCH_FR_BUFFER_SIZE", None)
                    if buffer is not None:
                        os.environ["TORCH_FR_BUFFER_SIZE"] = buffer
                    main(str(folder), job.layout, job.name, job.fmt)
                    code = 0
                finally:
                    os._exit(code)               # never back into the launcher's loop
            ranks.append((pid, dump_files(folder, job, rank)))
    ended: set[int] = set()
    deadline = time.monotonic() + deadline_s
    try:
        while time.monotonic() < deadline:
            for pid, _ in ranks:
                if pid not in ended and os.waitpid(pid, os.WNOHANG)[0]:
                    ended.add(pid)
            if all(pid in ended or all(p.exists() for p in files) for pid, files in ranks):
                break
            time.sleep(0.2)
    finally:
        for pid, _ in ranks:
            if pid not in ended:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    for key in jobs:
        (root / key / ".store").unlink(missing_ok=True)


def _chosen(argv: list[str]) -> tuple[dict[str, Job], str | None]:
    """The jobs named in ``argv`` (KEY or KEY:FORMAT; all of JOBS when none is) and the
    --buffer value (None: unset)."""
    buffer: str | None = "200"
    if "--buffer" in argv:
        at = argv.index("--buffer")
        buffer = None if argv[at + 1] == "unset" else argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    jobs: dict[str, Job] = {}
    for item in argv:
        key, _, fmt = item.partition(":")
        job = JOBS[key]
        jobs[key] = replace(job, fmt=fmt) if fmt else job
    return (jobs or dict(JOBS)), buffer


if __name__ == "__main__":
    if sys.argv[1] == "--all":
        _launch_all(Path(sys.argv[2]), float(sys.argv[3]), *_chosen(sys.argv[4:]))
    else:
        main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "pickle")
