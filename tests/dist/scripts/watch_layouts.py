"""Two plain training layouts (no collscope in them) for the `collscope watch` tests, on 4 gloo
ranks under torchrun.

LAYOUT=tpdp: 2 x 2 tensor x data parallel with ``new_group``: ranks {0, 1} and {2, 3} are the
TP groups, {0, 2} and {1, 3} the DP groups; per step a TP all_reduce after each of two layers'
compute, then the DP all_reduce of the gradients. LAYOUT=fsdp: FSDP2 (``fully_shard`` on each
of three linear layers and the root): per step all_gathers forward and backward and
reduce_scatters of the gradients.

SLOW_RANK / SLOW_MS: that rank sleeps SLOW_MS more before its step's first collective, every
step (from the first). STEPS (default 120). Rank 0 prints "step <i> <unix time>" per step.
"""

import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
slow_rank, slow_s = int(os.environ.get("SLOW_RANK", -1)), float(os.environ.get("SLOW_MS", 0)) / 1e3
steps = int(os.environ.get("STEPS", 120))
torch.manual_seed(0)


def tpdp_step(weights: list[torch.Tensor], tp: object, dp: object) -> None:
    x = torch.randn(16, 64)
    for w in weights:
        time.sleep(0.02)                             # the layer's compute
        x = torch.tanh(x @ w)
        dist.all_reduce(x, group=tp)                 # TP: the partial sums joined
    grad = torch.cat([w.flatten() for w in weights]) * x.mean()
    dist.all_reduce(grad, group=dp)                  # DP: the gradients averaged


if os.environ.get("LAYOUT", "tpdp") == "tpdp":
    tp_groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    dp_groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    tp, dp = tp_groups[rank // 2], dp_groups[rank % 2]
    weights = [torch.randn(64, 64) / 8 for _ in range(2)]
    for step in range(steps):
        time.sleep(0.01)
        if rank == slow_rank:
            time.sleep(slow_s)                       # the planted straggler
        tpdp_step(weights, tp, dp)
        if rank == 0:
            print(f"step {step} {time.time():.3f}", flush=True)
else:
    from torch.distributed.fsdp import fully_shard

    model = torch.nn.Sequential(*(torch.nn.Linear(256, 256) for _ in range(3)))
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        time.sleep(0.05)                             # data loading, the rest of the step
        if rank == slow_rank:
            time.sleep(slow_s)                       # the planted straggler: once per step
        loss = model(torch.randn(32, 256)).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if rank == 0:
            print(f"step {step} {time.time():.3f}", flush=True)
dist.destroy_process_group()
