"""Several process groups and send/recv, started as independent processes (srun-style:
RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; STEPS, default 20); rank 0 prints results that
are the same on every run."""

import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
pairs = [dist.new_group([r, (r + 1) % world]) for r in range(world)]
total = torch.zeros(1)
for step in range(int(os.environ.get("STEPS", 20))):
    time.sleep(0.05)
    t = torch.full((4,), float(rank + step))
    dist.all_reduce(t)
    for r, group in enumerate(pairs):
        if rank in (r, (r + 1) % world):
            u = torch.full((2,), float(rank))
            dist.all_reduce(u, group=group)
            total += u[0]
    peer_out, peer_in = (rank + 1) % world, (rank - 1) % world
    sent, got = torch.full((3,), float(rank)), torch.zeros(3)
    if rank % 2 == 0:
        dist.send(sent, peer_out)
        dist.recv(got, peer_in)
    else:
        dist.recv(got, peer_in)
        dist.send(sent, peer_out)
    total += got[0]
    dist.barrier()
if rank == 0:
    print(f"all_reduce {t.tolist()}")
    print(f"pairs and send/recv total {total.item()}")
dist.destroy_process_group()
