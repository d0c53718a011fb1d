"""`collscope links`: the pairwise bandwidth matrix of a job, and which node, NIC or GPU pair
is slow.

* :mod:`schedule` - pure pair schedules: a round-robin tournament (every pair once, rounds
  of disjoint pairs) or K random partners per node;
* :mod:`plan` - pure: node rounds -> rank pairs per round (inter-node, intra-node);
* :mod:`verdicts` - pure: robust thresholds, slow links and slow nodes;
* :mod:`expected` - link type per GPU pair from the topology doctor reads, nominal bandwidth;
* :mod:`run` - the measurement on torch.distributed (sendrecv both ways per pair).
"""

from collscope.links.config import LinksConfig

__all__ = ["LinksConfig"]
