"""The job `benchmarks/watch_overhead.py` times: a DDP MLP on gloo with real compute per step
(no sleeps, so the agent's GIL time would show), rank 0 writing each step's wall time (after
WARMUP steps) as JSON to the file in STEP_TIMES. STEPS steps (default 150)."""

import json
import os
import time

import torch
import torch.distributed as dist

WARMUP = 20

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
    torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
batch = torch.randn(64, 512)
times = []
for step in range(WARMUP + int(os.environ.get("STEPS", 150))):
    started = time.perf_counter()
    optimizer.zero_grad()
    model(batch).square().mean().backward()
    optimizer.step()
    if step >= WARMUP:
        times.append(time.perf_counter() - started)
if dist.get_rank() == 0:
    with open(os.environ["STEP_TIMES"], "w") as out:
        json.dump(times, out)
dist.destroy_process_group()
