"""How long `collscope hang` takes on large dump sets: W ranks x N entries each, made from a
real gloo dump's entry (tests/fixtures/flight-recorder/gloo_skip_4ranks, with its 4 stack
frames), one rank never entering the last collective. Prints ranks, entries, the verdict and
the wall time of analyse_paths (reading included).

usage: python benchmarks/hang_scale.py [--ranks 64 256] [--entries 2000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def make(folder: Path, world: int, entries: int) -> None:
    from collscope.hang.dumps import load_pickle

    real = REPO / "tests/fixtures/flight-recorder/gloo_skip_4ranks/nccl_trace_rank_0"
    source = load_pickle(real.read_bytes())
    template = source["entries"][0]
    for rank in range(world):
        issued = entries - 1 if rank == world // 2 else entries
        ring = [{**template, "collective_seq_id": i + 1, "op_id": i + 1, "record_id": i,
                 "retired": i < entries - 1} for i in range(issued)]
        dump = {**source, "entries": ring,
                "pg_config": {"": {"name": "", "desc": "", "ranks": str(list(range(world)))}},
                "pg_status": {"0": {"last_enqueued_collective": issued,
                                    "last_started_collective": -1,
                                    "last_completed_collective": min(issued, entries - 1)}}}
        (folder / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(dump))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    from collscope.hang import analyse_paths

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for world in args.ranks:
            folder = Path(tmp) / str(world)
            folder.mkdir()
            make(folder, world, args.entries)
            started = time.perf_counter()
            verdict = analyse_paths([folder]).verdict
            took = time.perf_counter() - started
            print(f"{world} ranks x {args.entries} entries: culprits {verdict.culprit_ranks} "
                  f"({verdict.cause.value}) in {took:.2f} s")


if __name__ == "__main__":
    main()
