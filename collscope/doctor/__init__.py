"""`collscope doctor`: is this node's (or cluster's) communication stack sane?

Pipeline, I/O only at the ends::

    probes.capture()  ->  RawCapture (bundle file name -> text)  ->  facts.facts_from()
        -> Facts  ->  checks.run_checks()  ->  [Finding]  ->  report.render_*()

``bundle`` writes/reads RawCaptures (--collect / --from), ``cluster`` exchanges them between
nodes (--all-ranks), ``selftest`` runs the small verified all_reduce.
"""

from __future__ import annotations

import json
from typing import Any

from collscope.doctor import probes
from collscope.doctor.checks import Finding, run_checks
from collscope.doctor.config import DoctorConfig
from collscope.doctor.facts import Facts, facts_from
from collscope.doctor.selftest import SelfTestResult
from collscope.redact import redact_secrets

__all__ = ["DoctorConfig", "Facts", "Finding", "collect_local", "diagnose", "run_selftest"]


def run_selftest(timeout_s: float) -> tuple[SelfTestResult, str | None]:
    """The local self-test: NCCL/RCCL ranks on 2 GPUs when there are 2, else 2 gloo ranks."""
    import torch
    import torch.distributed as dist

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus >= 2 and dist.is_nccl_available():
        from collscope.doctor.selftest import run_gpu_ranks

        return run_gpu_ranks(timeout_s)
    from collscope.doctor.selftest import run_gloo_threads

    result = run_gloo_threads(timeout_s)
    if gpus == 1:
        result.method += ("; one GPU only: RCCL/NCCL need a GPU per rank, so the 2 ranks use "
                          "gloo")
    return result, None


def collect_local(config: DoctorConfig, with_selftest: bool | None = None,
                  skip_reason: str = "Skipped (--no-selftest).") -> probes.RawCapture:
    """Capture this node; the self-test runs while the tools do."""
    run_it = config.selftest if with_selftest is None else with_selftest

    def selftest_files() -> probes.RawCapture:
        if not run_it:
            skipped = SelfTestResult("skipped", error=skip_reason)
            return {probes.SELFTEST_FILE: json.dumps(skipped.to_dict())}
        result, log = run_selftest(config.timeout_s)
        files = {probes.SELFTEST_FILE: json.dumps(result.to_dict(), indent=1)}
        if log:
            files[probes.NCCL_LOG_FILE] = redact_secrets(log)  # the bundle is shared
        return files

    return probes.capture(config.tool_timeout_s, extra=selftest_files)


def diagnose(capture: probes.RawCapture) -> tuple[Facts, list[Finding]]:
    facts = facts_from(capture)
    return facts, run_checks(facts)


def json_report(findings: list[Finding], facts: Facts, **extra: Any) -> dict[str, Any]:
    from collscope.doctor.facts import inventory

    return {"findings": [f.to_dict() for f in findings], "inventory": inventory(facts), **extra}
