"""The vendor and system tools doctor ran (or found in a bundle)."""

from __future__ import annotations

from collections.abc import Iterable

from collscope.doctor.facts import Facts
from collscope.doctor.probes import TOOLS, ToolRun
from collscope.doctor.recognize import TOOL_SLOTS, ToolFailure
from collscope.doctor.rules.registry import Verdict, rule
from collscope.redact import redact_secrets

# The GPU tools doctor runs; a failure is grouped under the tool that printed it.
GPU_TOOLS = ("amd-smi", "rocm-smi", "rocminfo", "nvidia-smi")
# Tools whose absence another rule reports (ucx.build: "UCX not installed"), not listed twice.
SAID_ELSEWHERE = {"ucx_info"}
# Arguments longer than this are cut in findings (nvidia-smi's --query-gpu list).
SHOWN_ARG_CHARS = 48


@rule("tools.availability", "tools", """
doctor reads the vendor and system tools (amd-smi, rocm-smi, rocminfo, nvidia-smi, ucx_info,
ibv_devinfo, lspci), each from an argument list with a timeout. A missing tool means the
facts it would give are absent from the report (not wrong); a tool that had to be killed
after the timeout usually means a wedged driver or GPU; a tool that exited non-zero is listed
with its exit code and the first line of its stderr (once, with every command of the tool
that failed the same way), saying so when its output could not be read; output that was only
partly understood is listed so that a bundle assembled by hand can be fixed. A GPU tool that
printed its own failure message is reported by tools.gpu-tool-failed instead, not twice.
""")
def check_tools(facts: Facts) -> Iterable[Verdict]:
    runs = facts.tools
    missing = [r for r in runs.values() if r.status == "missing"]
    names = sorted({r.argv[0] for r in missing if r.argv} - SAID_ELSEWHERE)
    if names:
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
    reported: set[str] = set()
    for (_, status, returncode, first), group in _failed_runs(facts).items():
        reported |= {r.file for r in group}
        commands = _and([f"`{_shown(r)}`" for r in group])
        unread = [r.file for r in group if r.file in facts.unrecognised]
        after = _unread_output(unread) + _not_understood(facts, group, unread)
        if status == "timeout":
            killed = "was" if len(group) == 1 else "were"
            yield Verdict("warn", f"{commands} did not answer and {killed} killed",
                          f"{first}. A hung vendor tool usually means a wedged driver or "
                          "GPU." + after,
                          "check `dmesg` for GPU/driver errors; reboot or reset the GPU")
        else:
            ended = f"exit {returncode}" if returncode is not None else "could not start"
            message = first or "no message on stderr"
            yield Verdict("warn" if unread else "info", f"{commands} failed ({ended})",
                          message + ("" if not after or message.endswith(".") else ".") + after,
                          "")
    for name, warnings in sorted(facts.notes.items()):
        if name not in reported:
            yield Verdict("info", f"{name}: {len(warnings)} line(s) not understood",
                          "; ".join(w[:120] for w in warnings[:3]), "")


FailedKey = tuple[str, str, int | None, str]   # tool, status, exit code, first stderr line


def _failed_runs(facts: Facts) -> dict[FailedKey, list[ToolRun]]:
    """Runs that timed out or exited non-zero, grouped by tool and how (status, exit code,
    first line of stderr): nvidia-smi failing the same way for both of its commands is one
    problem. Runs whose output is a GPU tool's failure message are left to
    tools.gpu-tool-failed."""
    covered = {failure.file for failure in facts.tool_failures}
    groups: dict[FailedKey, list[ToolRun]] = {}
    for run in sorted(facts.tools.values(), key=lambda r: r.file):
        if run.status in ("timeout", "error") and run.file not in covered:
            key = (_tool_of(run.file, run), run.status, run.returncode, first_line(run.stderr))
            groups.setdefault(key, []).append(run)
    return groups


def _unread_output(files: list[str]) -> str:
    if not files:
        return ""
    return (f" Its output ({', '.join(files)}) matches no tool output collscope reads, so the "
            "facts it gives are missing from this report.")


def _not_understood(facts: Facts, runs: list[ToolRun], unread: list[str]) -> str:
    parts = [f"{r.file}: {len(facts.notes[r.file])} line(s) not understood "
             f"({facts.notes[r.file][0][:120]})" for r in runs
             if facts.notes.get(r.file) and r.file not in unread]
    return "".join(f" {part}." for part in parts)


def first_line(text: str) -> str:
    """The first non-empty line of a tool's message, cut to 200 characters, secrets hidden."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return redact_secrets(lines[0][:200]) if lines else ""


def _shown(run: ToolRun) -> str:
    """The command as a finding shows it (very long arguments cut)."""
    return " ".join(arg if len(arg) <= SHOWN_ARG_CHARS else arg[:SHOWN_ARG_CHARS - 3] + "..."
                    for arg in run.argv) or run.file


def _group(file: str) -> str | None:
    return next((t.group for t in TOOLS if t.file == file), None)


def _tool_of(file: str, run: ToolRun | None) -> str:
    """The tool that wrote ``file``: the command doctor ran, else the tool its name says."""
    if run is not None and run.argv:
        return run.argv[0]
    spec = next((t for t in TOOLS if t.file == file), None)
    if spec is not None:
        return spec.argv[0]
    return next((tool for tool in GPU_TOOLS if file.startswith(tool)), file)


@rule("tools.recognised", "tools", """
doctor reads a bundle's files by their content as well as by their names, so outputs saved
under any name (gpu-status.txt, node1.log) are read as what they are: nvidia-smi and bare
amd-smi tables, amd-smi monitor / static / metric / topology (text or --json), every rocm-smi
table and --json, rocminfo, nvidia-smi topo -m and --query-gpu CSV, ucx_info, ibv_devinfo,
ibstat, lspci -vvv and NCCL/RCCL debug logs. Each file read as another name than its own is
listed here, including one saved under the bundle name of a different tool (amd-smi static
output saved as rocm-smi.txt), which is moved to the slot of the tool that wrote it. A file
that holds its own tool's output and another's (rocm-smi.txt with `rocm-smi -u --showmeminfo
vram` after the concise table) is read as both. Lines carrying a launcher's prefix (`srun -l`
task labels, `mpirun --tag-output`, time stamps) are read without it, and said so.
""")
def check_recognised(facts: Facts) -> Iterable[Verdict]:
    for name, slot in sorted(facts.read_as.items()):
        detail = (f"Its content is {slot}'s, not that of the tool {name} names; read as {slot}."
                  if name in TOOL_SLOTS else "Recognised by its content.")
        yield Verdict("info", f"{name} read as {slot}", detail, "")
    for name, slots in sorted(facts.read_also.items()):
        yield Verdict("info", f"{name} also read as {slots}",
                      f"It holds the output of {slots} as well as its own.", "")
    if facts.prefixes:
        names = sorted(facts.prefixes)
        yield Verdict("info", f"Launcher prefix stripped from {len(names)} file(s)",
                      "; ".join(f"{name}: {facts.prefixes[name][:160]}" for name in names[:4])
                      + (f"; and {len(names) - 4} more" if len(names) > 4 else ""), "")


@rule("tools.unrecognised", "tools", """
A bundle file whose content matches no tool output doctor reads (see tools.recognised for the
list) is named here, whatever its name: it was not read (or, under a bundle name, its parser
found nothing it knows), so whatever it shows is missing from the report. A second output of
a tool whose slot another file already fills is named too. The output of a run that failed
(non-zero exit, killed after the timeout) is said in that run's tools.availability finding,
not here again.
""")
def check_unrecognised(facts: Facts) -> Iterable[Verdict]:
    failed = {r.file for runs in _failed_runs(facts).values() for r in runs}
    for name, slot in sorted(facts.shadowed.items()):
        yield Verdict("warn", f"{name}: a second {slot} output, not read",
                      f"Another file already holds the {slot} output of this node.",
                      "keep one output per tool in a bundle (one bundle per node)")
    for name in sorted(set(facts.unrecognised) - failed):  # failed runs: tools.availability
        why = facts.notes.get(name, [])
        yield Verdict("warn", f"{name}: not recognised as any tool output collscope reads",
                      "Its content matches no tool doctor knows, so it was not read"
                      + (f" ({why[-1][:160]})." if why else "."),
                      "save the output of one tool per file (the names doctor --collect uses "
                      "are in the README); if it is a tool collscope should read, please "
                      "report it with the file")


@rule("tools.gpu-tool-failed", "tools", """
A GPU tool that printed its own failure message instead of its output, in a bundle file or
on its stdout or stderr when doctor ran it: nvidia-smi's "NVIDIA-SMI has failed because it
couldn't communicate with the NVIDIA driver", "Failed to initialize NVML: Driver/library
version mismatch" or "No devices were found"; rocm-smi's "Driver not initialized (amdgpu not
found in modules)", amd-smi's driver-not-loaded errors, or a shell's "command not found". The
node's GPUs are then not missing but unreachable: the driver is not loaded, does not match its
user-space library, or the tool is not installed. One finding per tool and failure, naming
every file (command) that showed it, with the exit code and the first line of stderr when
doctor ran the tool; tools.availability does not report these runs again.
""")
def check_gpu_tool_failed(facts: Facts) -> Iterable[Verdict]:
    groups: dict[tuple[str, str], list[ToolFailure]] = {}
    for failure in sorted(facts.tool_failures, key=lambda f: f.file):  # live = bundle order
        key = (_tool_of(failure.file, facts.tools.get(failure.file)), failure.meaning)
        groups.setdefault(key, []).append(failure)
    for (_, meaning), failures in groups.items():
        message = redact_secrets(failures[0].line)
        runs = [facts.tools[f.file] for f in failures if f.file in facts.tools]
        if runs:
            where = "on stderr" if failures[0].on_stderr else "instead of its output"
            detail = f"{_ran(runs)}, printing the tool's error {where}: \"{message}\"."
            stderr = next((line for line in map(first_line, (r.stderr for r in runs))
                           if line and line != message), "")
            if stderr:
                detail += f" First line of stderr: \"{stderr}\"."
        else:
            detail = f"The file holds the tool's error, not its output: \"{message}\"."
        yield Verdict("fail", f"{', '.join(f.file for f in failures)}: {meaning}", detail,
                      failures[0].fix)


def _ran(runs: list[ToolRun]) -> str:
    """"`a` and `b` each exited 9": the commands, grouped by how they ended."""
    by_ending: dict[str, list[str]] = {}
    for run in runs:
        by_ending.setdefault(_ending(run), []).append(f"`{_shown(run)}`")
    return "; ".join(_and(commands) + (" each " if len(commands) > 1 else " ") + ending
                     for ending, commands in by_ending.items())


def _and(items: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def _ending(run: ToolRun) -> str:
    if run.status == "timeout":
        return "did not answer and was killed"
    if run.returncode is None:
        return "could not start" if run.status == "error" else "ran"
    return f"exited {run.returncode}"
