"""One rank of the check-memory measurement: how much the check of a 256 MiB all_gather adds
to this process's peak resident memory: the larger of its two phases (filling the inputs, and
counting mismatches), each from a reset high-water mark. The collective the check runs in
between is the one the timed loop runs (gloo's own temporaries are not the check's).
Writes {"message": bytes, "added": bytes, "wrong": n} to OUT_DIR/rank<N>.json. Run with
torchrun (2 ranks, gloo)."""

import json
import re
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from collscope.collectives import ops


def memory(field: str) -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+)\s*kB", status).group(1)) * 1024


dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
message = 256 * 1024**2
count = message // (4 * world)               # float elements per rank
operation = ops.build("all_gather", "float", "none", 0, count, False, rank, world,
                      torch.device("cpu"))
operation.launch()                           # buffers touched: resident before the check
dist.barrier()


def peak_added(phase):
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark to now
    before = memory("VmRSS")
    result = phase()
    return memory("VmHWM") - before, result


fill_added, _ = peak_added(operation.fill_for_check)
operation.launch()
count_added, wrong = peak_added(operation.count_wrong)
added = max(fill_added, count_added)
Path(sys.argv[1], f"rank{rank}.json").write_text(json.dumps(
    {"message": message, "added": added, "wrong": wrong}))
dist.destroy_process_group()
