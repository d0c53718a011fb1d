"""The job `benchmarks/watch_overhead.py` times: a DDP MLP on gloo with real compute per step
(no sleeps, so the agent's GIL time would show). Rank 0 writes to the file in STEP_TIMES, as
JSON: each step's wall time (after WARMUP steps) and every rank's process CPU time per step
over those steps (time.process_time: all the process's threads, the agent's included).
STEPS steps (default 150); PIN_CPUS=1 pins each local rank to one CPU."""

import json
import os
import time

import torch
import torch.distributed as dist

WARMUP = 20

if os.environ.get("PIN_CPUS"):
    # each local rank on one CPU, round robin: the same placement in every job, so that
    # separate jobs' step times differ by what runs in them, not by where the scheduler put
    # the ranks (unpinned, 4 ranks on 2 cores scatter by 10-15 % from job to job)
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[int(os.environ.get("LOCAL_RANK", "0")) % len(cpus)]})
dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
    torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
batch = torch.randn(64, 512)
times = []
cpu_started = 0.0
for step in range(WARMUP + int(os.environ.get("STEPS", 150))):
    if step == WARMUP:
        cpu_started = time.process_time()
    started = time.perf_counter()
    optimizer.zero_grad()
    model(batch).square().mean().backward()
    optimizer.step()
    if step >= WARMUP:
        times.append(time.perf_counter() - started)
cpu_per_step = [0.0] * dist.get_world_size()
dist.all_gather_object(cpu_per_step, (time.process_time() - cpu_started) / len(times))
if dist.get_rank() == 0:
    with open(os.environ["STEP_TIMES"], "w") as out:
        json.dump({"wall_s": times, "cpu_s_per_step": cpu_per_step}, out)
dist.destroy_process_group()
