"""Differences between nodes: found across ranks (doctor/cluster.py), registered here for
--explain."""

from __future__ import annotations

from collscope.doctor.rules.registry import register_external

register_external("cluster.differences", "cluster", """
Under --all-ranks (torchrun, srun, mpirun, or --nproc locally) every node's local rank 0
collects its facts and all ranks exchange them (all_gather_object); rank 0 shows what differs
between nodes: GPU driver, ROCm, RCCL/NCCL and torch versions, GPU count and model, the
NCCL_/RCCL_/HSA_/UCX_/GLOO_ environment, kernel settings, NIC and RDMA port states. Different
library versions or environments across nodes are the usual cause of multi-node hangs and of
one slow node holding back the whole job; per-rank device variables (HIP/CUDA_VISIBLE_DEVICES)
are excluded.
""")
