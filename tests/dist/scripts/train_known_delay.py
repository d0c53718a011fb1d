"""Run under torchrun: exposed communication must grow by a delay we inject ourselves.

A comm hook that sleeps DELAY_S before all-reducing the last bucket puts exactly that much on
the critical path of every synchronised step (the last bucket is ready only when backward is
almost done), and nothing on the steps without sync (no hook runs there). Both configurations
are measured in this one run, with the same wrapper (delay 0 and DELAY_S), so machine load
hits both alike. Rank 0 writes REPORT (JSON) with both records.
"""

import json
import os
import sys
import time

import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from collscope.runtime.dist import attach
from collscope.train.config import DDPKnobs, TrainConfig
from collscope.train.measure import measure

DELAY_S = float(sys.argv[1])
REPORT = sys.argv[2]


def delayed_allreduce(delay_s):
    def hook(state, bucket):
        if bucket.is_last():
            time.sleep(delay_s)
        return default_hooks.allreduce_hook(state, bucket)

    return hook


dist.init_process_group("gloo")
session = attach(timeout_s=120)
config = TrainConfig(preset="tiny", hidden=32, layers=1, heads=2, seq_len=16, batch_size=2,
                     steps=8, warmup=2)
records = {}
for name, delay in (("no_delay", 0.0), ("delay", DELAY_S)):
    records[name] = measure(session, config, DDPKnobs(), session.world_size,
                            custom_hook=(None, delayed_allreduce(delay)),
                            label=f"allreduce + {delay * 1e3:g} ms").to_dict()
if session.rank == 0:
    with open(REPORT, "w") as out:
        json.dump(records, out)
dist.barrier()
session.close()
dist.destroy_process_group()
# gloo's worker threads can outlive the group (the DDP reducers keep it alive); a rank that then
# finalizes the interpreter can abort ("terminate called without an active exception"), as
# runtime/spawn.leave_process explains. Everything is written: leave without finalization.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
