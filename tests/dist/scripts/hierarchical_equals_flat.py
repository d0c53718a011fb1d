"""Run under torchrun: hierarchical all-reduce vs the flat one, and DDP with the hook vs without.

Writes REPORT_DIR/rank<N>.json with what each rank checked; exits non-zero on any mismatch.
"""

import copy
import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from collscope.hooks.hierarchical import (
    HierarchicalState,
    build_mesh,
    hierarchical_all_reduce,
    hierarchical_hook,
)

RANKS_PER_NODE = int(sys.argv[1])
REPORT_DIR = Path(sys.argv[2])

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
mesh = build_mesh(world, RANKS_PER_NODE, "cpu")
checked = []
# Pipeline chunks: 1000 B (4099 elements: 17 chunks of float32, 33 of float64, neither the
# message nor the last chunk a multiple of the chunk or of the ranks per node), 4 KiB (a few
# chunks), the default (one chunk at these sizes: the unpipelined schedule).
CHUNKS = (1000, 4096, None)
for numel in (1, 5, 1024, 4099):
    for op, flat_op in (("sum", dist.ReduceOp.SUM), ("avg", dist.ReduceOp.AVG)):
        for dtype in (torch.float32, torch.float64):
            generator = torch.Generator().manual_seed(1000 * rank + numel)
            data = torch.randn(numel, generator=generator).to(dtype)
            flat = data.clone()
            dist.all_reduce(flat, flat_op)
            for chunk in CHUNKS:
                ours = data.clone()
                hierarchical_all_reduce(ours, mesh, op, *([chunk] if chunk else []))
                tolerance = 1e-5 if dtype == torch.float32 else 1e-12
                if not torch.allclose(ours, flat, rtol=tolerance, atol=tolerance):
                    sys.exit(f"rank {rank}: mismatch at {numel} {op} {dtype} chunk {chunk}")
                checked.append(f"{numel}:{op}:{dtype}:{chunk}")

# DDP: three steps with the hierarchical hook end with the same parameters as plain DDP.
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
plain = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(model), bucket_cap_mb=0.001)
hooked = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(model), bucket_cap_mb=0.001)
# 1000-byte chunks: each bucket (up to 8 KiB of float32) goes through the pipeline.
hooked.register_comm_hook(HierarchicalState(mesh, chunk_bytes=1000), hierarchical_hook)
optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (plain, hooked)]
for step in range(3):
    generator = torch.Generator().manual_seed(100 * step + rank)
    x = torch.randn(16, 32, generator=generator)
    y = torch.randn(16, 8, generator=generator)
    for ddp, optimizer in zip((plain, hooked), optimizers):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
max_diff = max((a - b).abs().max().item()
               for a, b in zip(plain.parameters(), hooked.parameters()))
moved = max((a - b).abs().max().item() for a, b in zip(model.parameters(), plain.parameters()))
(REPORT_DIR / f"rank{rank}.json").write_text(json.dumps(
    {"rank": rank, "checked": len(checked), "ddp_max_diff": max_diff, "ddp_moved": moved}))
# Every rank reaches teardown before any group goes away: a rank that destroys its groups
# while a peer still runs a collective on them can abort in C++ (seen once under load).
dist.barrier()
dist.destroy_process_group()
sys.exit(0 if max_diff < 1e-5 and moved > 1e-3 else 1)
