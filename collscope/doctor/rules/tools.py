"""The vendor and system tools doctor ran (or found in a bundle)."""

from __future__ import annotations

from collections.abc import Iterable

from collscope.doctor.facts import Facts
from collscope.doctor.probes import TOOLS
from collscope.doctor.recognize import TOOL_SLOTS
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


@rule("tools.recognised", "tools", """
doctor reads a bundle's files by their content as well as by their names, so outputs saved
under any name (gpu-status.txt, node1.log) are read as what they are: nvidia-smi and bare
amd-smi tables, amd-smi monitor / static / metric / topology (text or --json), every rocm-smi
table and --json, rocminfo, nvidia-smi topo -m and --query-gpu CSV, ucx_info, ibv_devinfo,
ibstat, lspci -vvv and NCCL/RCCL debug logs. Each file read as another name than its own is
listed here, including one saved under the bundle name of a different tool (amd-smi static
output saved as rocm-smi.txt), which is moved to the slot of the tool that wrote it.
""")
def check_recognised(facts: Facts) -> Iterable[Verdict]:
    for name, slot in sorted(facts.read_as.items()):
        detail = (f"Its content is {slot}'s, not that of the tool {name} names; read as {slot}."
                  if name in TOOL_SLOTS else "Recognised by its content.")
        yield Verdict("info", f"{name} read as {slot}", detail, "")


@rule("tools.unrecognised", "tools", """
A bundle file whose content matches no tool output doctor reads (see tools.recognised for the
list) is named here, whatever its name: it was not read (or, under a bundle name, its parser
found nothing it knows), so whatever it shows is missing from the report. A second output of
a tool whose slot another file already fills is named too.
""")
def check_unrecognised(facts: Facts) -> Iterable[Verdict]:
    for name, slot in sorted(facts.shadowed.items()):
        yield Verdict("warn", f"{name}: a second {slot} output, not read",
                      f"Another file already holds the {slot} output of this node.",
                      "keep one output per tool in a bundle (one bundle per node)")
    for name in sorted(facts.unrecognised):
        yield Verdict("warn", f"{name}: not recognised as any tool output collscope reads",
                      "Its content matches no tool doctor knows, so it was not read.",
                      "save the output of one tool per file (the names doctor --collect uses "
                      "are in the README); if it is a tool collscope should read, please "
                      "report it with the file")


@rule("tools.gpu-tool-failed", "tools", """
A bundle file that holds a GPU tool's own failure message instead of its output: nvidia-smi's
"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", "Failed to
initialize NVML: Driver/library version mismatch" or "No devices were found"; rocm-smi's
"Driver not initialized (amdgpu not found in modules)", amd-smi's driver-not-loaded errors,
or a shell's "command not found". The node's GPUs are then not missing but unreachable: the
driver is not loaded, does not match its user-space library, or the tool is not installed.
""")
def check_gpu_tool_failed(facts: Facts) -> Iterable[Verdict]:
    for failure in facts.tool_failures:
        yield Verdict("fail", f"{failure.file}: {failure.meaning}",
                      f"The file holds the tool's error, not its output: \"{failure.line}\".",
                      failure.fix)
