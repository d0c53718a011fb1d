"""The CPU one Flight Recorder read costs each reader of the one entry model
(collscope.parsers.flight_recorder): watch's agent decoding a 256-entry ring as it does every
round inside the job, and hang decoding and reducing one rank's 2000-entry JSON dump (the unit
of its 16k-rank streaming). NCCL-shaped dumps from benchmarks/hang_scale.py's maker; the best
and the median of 5 repeats of this process's CPU time per read are printed.

usage: python benchmarks/fr_entry_read.py     (PYTHONPATH=OTHER_TREE to time another tree)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hang_scale import make_dump  # noqa: E402

from collscope.hang.dumps import parse_dump  # noqa: E402
from collscope.hang.typed_json import typed_dump  # noqa: E402
from collscope.watch.flight import FlightReader  # noqa: E402


def per_call_ms(call: Callable[[], object], calls: int) -> list[float]:
    times = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(calls):
            call()
        times.append((time.process_time() - started) / calls * 1e3)
    return sorted(times)


def main() -> None:
    dump = make_dump(16384, 2000, 2000, "json", [])
    ring = make_dump(4, 256, 256, "json", [])

    def hang_read() -> None:
        typed = typed_dump(dump)
        assert typed is not None
        parse_dump(typed, "nccl_trace_rank_3.json", "json", reduce=True)

    def watch_read() -> None:
        FlightReader(lambda: ring).read()

    for name, call, calls in (("hang: one rank's 2000-entry JSON dump", hang_read, 60),
                              ("watch: one read of a 256-entry ring", watch_read, 600)):
        times = per_call_ms(call, calls)
        print(f"{name}: {times[0]:.3f} ms CPU best, {times[2]:.3f} ms median (5 x {calls})")


if __name__ == "__main__":
    main()
