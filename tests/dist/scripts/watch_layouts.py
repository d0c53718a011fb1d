"""Three plain training layouts (no collscope in them) for the `collscope watch` tests, on gloo.

LAYOUT=ddp: DistributedDataParallel on a linear layer, one all_reduce per step. LAYOUT=tpdp:
2 x 2 tensor x data parallel with ``new_group`` ({0, 1} and {2, 3} the TP groups, {0, 2} and
{1, 3} the DP groups): per step a TP all_reduce after each of two layers' compute, then the DP
all_reduce of the gradients. LAYOUT=fsdp: FSDP2 (``fully_shard`` on each of three linear
layers and the root): per step all_gathers forward and backward and reduce_scatters.

SLOW_RANK / SLOW_MS: that rank sleeps SLOW_MS more before its step's first collective, every
step from SLOW_FROM (default 0: the first). STEPS (default 60). Rank 0 prints
"step <i> <unix time>" per step.

Started as one rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set), or with FORK_RANKS=N as
the whole job: the script imports torch once and forks N ranks that meet on a free port (each
rank importing torch would cost ~2 s of CPU; `collscope watch`'s bootstrap, loaded in this
process, is inherited by every fork). Exit code 0 when every rank ended well.
"""

import atexit
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

SLOW_FROM = int(os.environ.get("SLOW_FROM", 0))


def tpdp(rank: int, steps: int, slow_s: float) -> None:
    tp_groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    dp_groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    tp, dp = tp_groups[rank // 2], dp_groups[rank % 2]
    weights = [torch.randn(64, 64) / 8 for _ in range(2)]
    for step in range(steps):
        time.sleep(0.01)
        if slow_s and step >= SLOW_FROM:
            time.sleep(slow_s)                       # the planted straggler
        x = torch.randn(16, 64)
        for w in weights:
            time.sleep(0.02)                         # the layer's compute
            x = torch.tanh(x @ w)
            dist.all_reduce(x, group=tp)             # TP: the partial sums joined
        grad = torch.cat([w.flatten() for w in weights]) * x.mean()
        dist.all_reduce(grad, group=dp)              # DP: the gradients averaged
        if rank == 0:
            print(f"step {step} {time.time():.3f}", flush=True)


def fsdp(rank: int, steps: int, slow_s: float) -> None:
    from torch.distributed.fsdp import fully_shard

    model = torch.nn.Sequential(*(torch.nn.Linear(256, 256) for _ in range(3)))
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        time.sleep(0.05)                             # data loading, the rest of the step
        if slow_s and step >= SLOW_FROM:
            time.sleep(slow_s)                       # the planted straggler: once per step
        model(torch.randn(32, 256)).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        if rank == 0:
            print(f"step {step} {time.time():.3f}", flush=True)


def ddp(rank: int, steps: int, slow_s: float) -> None:
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        time.sleep(0.05)                             # the step's compute
        if slow_s and step >= SLOW_FROM:
            time.sleep(slow_s)
        optimizer.zero_grad()
        model(torch.randn(8, 64)).sum().backward()
        optimizer.step()
        if rank == 0:
            print(f"step {step} {time.time():.3f}", flush=True)


def run() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    slow = float(os.environ.get("SLOW_MS", 0)) / 1e3 if \
        rank == int(os.environ.get("SLOW_RANK", -1)) else 0.0
    layout = {"ddp": ddp, "tpdp": tpdp, "fsdp": fsdp}[os.environ.get("LAYOUT", "tpdp")]
    layout(rank, int(os.environ.get("STEPS", 60)), slow)
    dist.destroy_process_group()


def fork_job(ranks: int) -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    children = []
    for rank in range(ranks):
        pid = os.fork()
        if pid == 0:
            os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(ranks),
                              MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            code = 1
            try:
                run()
                code = 0
            finally:
                atexit._run_exitfuncs()              # the watch agent's own ending
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)
    return 0 if all(os.waitpid(pid, 0)[1] == 0 for pid in children) else 1


if __name__ == "__main__":
    forks = int(os.environ.get("FORK_RANKS", 0))
    sys.exit(fork_job(forks) if forks and "RANK" not in os.environ else run())
