"""A plain DDP training loop (no collscope in it) for the `collscope watch` tests.

Environment: STEPS (default 80); SLOW_RANK / SLOW_FROM (/ SLOW_UNTIL): that rank sleeps 30 ms
more per step from that step on (until that step); STALL_RANK / STALL_AT: that rank stops (sleeps
in Python) at that step; EXIT_CODE: the exit code. Rank 0 prints "step <i> <unix time>" per step.
"""

import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
slow_rank, slow_from = int(os.environ.get("SLOW_RANK", -1)), int(os.environ.get("SLOW_FROM", 40))
stall_rank, stall_at = int(os.environ.get("STALL_RANK", -1)), int(os.environ.get("STALL_AT", 30))
for step in range(int(os.environ.get("STEPS", 80))):
    time.sleep(0.05)                                  # the step's compute
    if rank == slow_rank and slow_from <= step < int(os.environ.get("SLOW_UNTIL", 1 << 62)):
        time.sleep(0.03)                              # the planted fail-slow
    if rank == stall_rank and step == stall_at:
        time.sleep(600)                               # STALL-LINE
    optimizer.zero_grad()
    model(torch.randn(8, 64)).sum().backward()
    optimizer.step()
    if rank == 0:
        print(f"step {step} {time.time():.3f}", flush=True)
dist.destroy_process_group()
sys.exit(int(os.environ.get("EXIT_CODE", 0)))
