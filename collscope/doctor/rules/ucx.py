"""UCX: the build and its transports."""

from __future__ import annotations

from collections.abc import Iterable

from collscope.doctor.facts import Facts
from collscope.doctor.rules.registry import Verdict, rule


@rule("ucx.build", "ucx", """
UCX carries MPI and UCC traffic (and GPU buffers through them when built with ROCm or CUDA
support). `ucx_info -v` shows how it was configured, `ucx_info -d` its transports and memory
domains. A UCX without ROCm support on a ROCm host stages every GPU buffer through host memory
(or rejects it), so GPU-aware MPI collectives crawl: rebuild UCX with --with-rocm (or use the
UCX shipped for ROCm). Same for CUDA on NVIDIA hosts.
""")
def check_ucx(facts: Facts) -> Iterable[Verdict]:
    version = facts.ucx_version
    if version is None:
        run = facts.tools.get("ucx_info-v.txt")
        if run is not None and run.status == "missing":
            yield Verdict("info", "UCX not installed (ucx_info not found)",
                          "UCX matters only for MPI/UCC transports.", "")
        return
    domains = facts.ucx_devices.memory_domains if facts.ucx_devices else []
    transports = sorted({t.name for t in (facts.ucx_devices.transports
                                          if facts.ucx_devices else [])})
    # Support is known from the configure line or the memory domains `ucx_info -d` lists;
    # with neither read (an output doctor could not parse) it is unknown, never "lacks".
    known = (bool(version.configure_flags) or bool(domains) or version.with_rocm is not None
             or version.with_cuda is not None)
    rocm = version.with_rocm or any("rocm" in m.name or "rocm" in m.memory_types
                                    for m in domains)
    cuda = version.with_cuda or any("cuda" in m.name or "cuda" in m.memory_types
                                    for m in domains)

    def said(flag: bool | None) -> str:
        return "yes" if flag else "no" if known else "unknown"

    detail = (f"UCX {version.version or 'unknown'}; ROCm support: {said(rocm)}; "
              f"CUDA support: {said(cuda)}; transports: "
              f"{', '.join(transports) or 'not captured (ucx_info -d)'}.")
    if not known and version.version is None:
        yield Verdict("info", "UCX build unknown: ucx_info output not understood",
                      detail + " Neither a version, a configure line nor memory domains "
                      "were read.", "save `ucx_info -v` and `ucx_info -d` as they print")
        return
    # A warning carries the whole summary: the build is then one finding, not two.
    if known and facts.vendor == "amd" and not rocm:
        yield Verdict("warn", "UCX lacks ROCm support on a ROCm host",
                      detail + " GPU buffers handed to UCX (GPU-aware MPI, UCC) are staged "
                      "through host memory or rejected.",
                      "rebuild UCX with `./configure --with-rocm=/opt/rocm` (or install a "
                      "ROCm-enabled UCX) and point LD_LIBRARY_PATH at it")
    elif known and facts.vendor == "nvidia" and not cuda:
        yield Verdict("warn", "UCX lacks CUDA support on an NVIDIA host", detail,
                      "rebuild UCX with `./configure --with-cuda=/usr/local/cuda`")
    else:
        yield Verdict("info", f"UCX {version.version or 'unknown'}", detail)
