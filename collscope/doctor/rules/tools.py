"""The vendor and system tools doctor ran (or found in a bundle)."""

from __future__ import annotations

from collections.abc import Iterable

from collscope.doctor.facts import Facts
from collscope.doctor.probes import TOOLS
from collscope.doctor.rules.registry import Verdict, rule


@rule("tools.availability", "tools", """
doctor reads the vendor and system tools (amd-smi, rocm-smi, rocminfo, nvidia-smi, ucx_info,
ibv_devinfo, lspci), each from an argument list with a timeout. A missing tool means the
facts it would give are absent from the report (not wrong); a tool that had to be killed
after the timeout usually means a wedged driver or GPU; output that was only partly
understood is listed so that a bundle assembled by hand can be fixed.
""")
def check_tools(facts: Facts) -> Iterable[Verdict]:
    runs = facts.tools
    missing = [r for r in runs.values() if r.status == "missing"]
    if missing:
        names = sorted({r.argv[0] for r in missing if r.argv})
        vendor_runs = [r for f, r in runs.items() if _group(f) == facts.vendor]
        gpu_tools_missing = bool(vendor_runs) and all(r.status == "missing"
                                                      for r in vendor_runs)
        fix = ""
        if gpu_tools_missing:
            fix = ("install ROCm's amd-smi / rocm-smi / rocminfo (or add /opt/rocm/bin to PATH)"
                   if facts.vendor == "amd" else "install the NVIDIA driver utilities "
                   "(nvidia-smi)")
        yield Verdict("warn" if gpu_tools_missing else "info",
                      f"Not installed (or not on PATH): {', '.join(names)}",
                      "The facts these tools give are missing from this report." +
                      (" This node has GPUs but none of their tools." if gpu_tools_missing
                       else ""), fix)
    for run in runs.values():
        command = " ".join(run.argv)
        if run.status == "timeout":
            yield Verdict("warn", f"`{command}` did not answer and was killed",
                          f"{run.stderr}. A hung vendor tool usually means a wedged driver or "
                          "GPU.", "check `dmesg` for GPU/driver errors; reboot or reset the GPU")
        elif run.status == "error":
            first = (run.stderr.splitlines() or ["no message"])[0][:200]
            yield Verdict("info", f"`{command}` failed (exit {run.returncode})", first, "")
    for name, warnings in sorted(facts.notes.items()):
        yield Verdict("info", f"{name}: {len(warnings)} line(s) not understood",
                      "; ".join(w[:120] for w in warnings[:3]), "")


def _group(file: str) -> str | None:
    return next((t.group for t in TOOLS if t.file == file), None)
