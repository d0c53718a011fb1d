"""The self-test's result."""

from __future__ import annotations

from collections.abc import Iterable

from collscope.doctor.facts import Facts
from collscope.doctor.rules.common import human_bytes
from collscope.doctor.rules.registry import Verdict, rule


@rule("selftest.allreduce", "selftest", """
A small all_reduce between 2 local ranks (two gloo ranks in one process on CPU hosts; two
spawned ranks on GPUs 0 and 1 through RCCL/NCCL when the node has GPUs), verified element by
element, with its time (mean per operation). It proves that torch.distributed can set up a
group and move correct data on this node, with the environment as it is. Under --all-ranks
the self-test is one all_reduce across every rank of the job instead.
""")
def check_selftest(facts: Facts) -> Iterable[Verdict]:
    result = facts.selftest
    if result is None or result.status == "skipped":
        yield Verdict("info", "Self-test not run",
                      (result.error if result and result.error else
                       "Skipped (--no-selftest, or a bundle without selftest.json)."), "")
        return
    what = (f"{result.world_size}-rank {result.backend} all_reduce of "
            f"{human_bytes(result.size_bytes)}")
    if result.status == "ok":
        took = f", {result.time_us:.0f} us per op" if result.time_us is not None else ""
        bw = f", busbw {result.busbw_gbs:.3g} GB/s" if result.busbw_gbs is not None else ""
        yield Verdict("ok", f"Self-test passed: {what} verified{took}{bw}", result.method)
        return
    yield Verdict("fail", f"Self-test failed: {what}",
                  f"{result.error or 'no result'}. {result.method}",
                  "run with NCCL_DEBUG=INFO (GPUs) and check GLOO_SOCKET_IFNAME / "
                  "NCCL_SOCKET_IFNAME and that this host's name resolves (`getent hosts "
                  "$(hostname)`)")
