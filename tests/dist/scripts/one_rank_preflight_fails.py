"""One rank of a job whose pre-flight fails on rank FAILING only (as when one GPU of a node is
already busy); the body is a collective, so a rank that went ahead alone would block in it.

usage: one_rank_preflight_fails.py FAILING   (RANK, WORLD_SIZE, MASTER_* from the environment)
"""

from __future__ import annotations

import sys

import torch.distributed as dist

from collscope.errors import UsageError
from collscope.runtime.entry import Job, launch_or_spawn


def main(failing: int) -> int:
    def preflight(session) -> None:
        if session.rank == failing:
            raise UsageError(f"--preset: needs 9 GiB per rank but 1 GiB is free (rank "
                             f"{session.rank}'s device)")

    def body(session, launcher: str) -> int:
        dist.barrier()
        return 0

    job = Job("train", "gloo", 8.0, None, lambda world, backend: None, body,
              rank_preflight=preflight)
    try:
        return launch_or_spawn(job, [])
    except UsageError as error:  # what collscope.cli.main does
        sys.stderr.write(f"collscope train: {error}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
