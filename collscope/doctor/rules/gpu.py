"""GPUs: inventory, what torch sees, and whether torch's build matches the stack."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from collscope.doctor import vendor_output
from collscope.doctor.facts import Facts
from collscope.doctor.rules.common import VISIBLE_DEVICES, human_bytes, listing
from collscope.doctor.rules.registry import Verdict, rule
from collscope.runtime.torch_required import INSTALL_TORCH


@rule("gpu.inventory", "gpu", """
Which GPUs this node has, as the vendor tools report them (amd-smi / rocm-smi / rocminfo on
AMD, nvidia-smi on NVIDIA, the vendor library when installed): count, model, memory, driver
and ROCm or CUDA version. With no GPU, collscope and torch.distributed use gloo on the CPU: a
valid setup for learning and CI, not for training. GPUs visible on the PCI bus that no tool
and no torch sees usually mean a missing or failed driver (amdgpu / nvidia kernel module).
A node with mixed GPU models makes every collective run at the pace of the slowest GPU.
""")
def check_gpu_inventory(facts: Facts) -> Iterable[Verdict]:
    if not facts.gpus and not (facts.torch and facts.torch.gpu_count):
        pci_gpus = [d.address for d in facts.pci if d.is_gpu]
        if pci_gpus:
            yield Verdict("warn", f"{len(pci_gpus)} GPU(s) on the PCI bus, but no driver tool or "
                          "torch sees any",
                          f"PCI devices {listing(pci_gpus)} are GPUs, yet amd-smi/rocm-smi/"
                          "nvidia-smi report none and torch counts 0: collectives would run "
                          "on the CPU.",
                          "check the kernel driver: `lsmod | grep -e amdgpu -e nvidia`, "
                          "`dmesg | grep -i -e amdgpu -e nvrm`; install ROCm or the NVIDIA "
                          "driver")
            return
        if facts.tool_failures:  # GPUs there may be, unreachable: said once, by the tools
            yield Verdict("info", "No GPU visible: the GPU tools failed (tools.gpu-tool-failed)",
                          "No GPU is visible to the vendor tools or to torch; until the "
                          "failure reported under Tools is fixed, collscope (and "
                          "torch.distributed's auto choice) would use gloo on CPU ranks.", "")
            return
        yield Verdict("info", "No GPU found: gloo on the CPU will be used",
                      "No AMD or NVIDIA GPU is visible to the vendor tools or to torch, so "
                      "collscope (and torch.distributed's auto choice) uses the gloo backend on "
                      "CPU ranks. Fine for trying collscope; GPU clusters should show their "
                      "GPUs here.", "")
        return
    gpus = facts.gpus
    names = Counter(g.name or "unknown model" for g in gpus)
    count = len(gpus) or (facts.torch.gpu_count if facts.torch else 0)
    models = ", ".join(f"{n} x {name}" for name, n in names.items()) or \
        ", ".join(sorted(set(facts.torch.gpu_names if facts.torch else [])))
    reported = [g.memory_bytes for g in gpus if g.memory_bytes]
    version = _stack_version(facts)
    sizes = ", ".join(human_bytes(m) for m in sorted(set(reported))) or "unknown"
    # "each" only when every GPU reports its memory (a partial capture lists fewer)
    sizes += " each" if reported and len(reported) == len(gpus) else \
        f" ({len(reported)} of {len(gpus)} GPUs report it)" if reported else ""
    driver = facts.driver_version
    detail = (f"{count} GPU(s): {models} (source: {facts.gpu_source or 'torch'}); memory "
              f"{sizes}; driver {driver or 'unknown'}"
              + (f" (source: {facts.driver_source})" if driver and facts.driver_source else "")
              + f"; {version}.")
    yield Verdict("ok", f"{count} GPU(s): {models}", detail)
    if len([n for n in names if n != "unknown model"]) > 1:
        yield Verdict("warn", "Mixed GPU models in one node",
                      f"Found {models}. Collectives progress at the pace of the slowest GPU "
                      "and RCCL/NCCL tuning assumes identical devices.",
                      "run one job per GPU model (HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES)")


def _stack_version(facts: Facts) -> str:
    """Each version with what it is and its source; nothing credited to the GPU tool that did
    not print it (an NCCL log's "+cuda12.2" is NCCL's build CUDA, not the driver's)."""
    versions = facts.stack_versions()
    if not versions:
        return "ROCm unknown" if facts.vendor == "amd" else "driver CUDA unknown"
    return "; ".join(f"{what} {version} (source: {where})" for what, version, where in versions)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


@rule("gpu.vendor-library", "gpu", """
collscope reads GPU inventory and metrics through the vendors' Python bindings (amdsmi for AMD,
pynvml for NVIDIA). Some bindings print to stdout when they are imported or initialised, most
often because the binding is installed but its native library is missing: amdsmi without
ROCm's libamd_smi.so prints "Unable to find libamd_smi.so library ..." and fails, so collscope
falls back to the command-line tools (or sees no GPU). collscope catches that output at the
file-descriptor level (it would otherwise corrupt `--json` on stdout) and reports it here.
""")
def check_vendor_library(facts: Facts) -> Iterable[Verdict]:
    for library, text in sorted(facts.vendor_output.items()):
        lines = _lines(text)
        if not lines:
            continue
        detail = " | ".join(lines[:4])[:400]
        if any(marker in text.lower() for marker in vendor_output.MISSING_LIBRARY_MARKERS):
            native = vendor_output.NATIVE_LIBRARY.get(library, "its native library")
            yield Verdict("warn", f"{library} is installed but its library is missing: "
                          f"{native}", f"What {library} printed while loading: {detail}",
                          vendor_output.FIX.get(library, ""))
        else:
            yield Verdict("info", f"{library} printed {len(lines)} line(s) while loading",
                          detail, "")


@rule("gpu.torch-visible", "gpu", """
torch must see the same GPUs as the vendor tool, or ranks will be bound to the wrong devices
(or to none). The usual causes: HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES (AMD; ROCR_ applies
first, then HIP_ indexes into what is left) or CUDA_VISIBLE_DEVICES left set in a job
script or by a scheduler; missing permissions on /dev/kfd and /dev/dri/renderD* (the user must
be in the video and render groups); a container started without the devices (--device=/dev/kfd
--device=/dev/dri on ROCm, --gpus all on NVIDIA).
""")
def check_torch_visible(facts: Facts) -> Iterable[Verdict]:
    torch = facts.torch
    if torch is None or (torch.error and not torch.version) or not facts.gpus:
        return
    if not _build_matches(facts):
        return  # torch.build says why
    vendor_n, torch_n = len(facts.gpus), torch.gpu_count
    limits = {k: facts.env[k] for k in VISIBLE_DEVICES if k in facts.env}
    if torch_n == vendor_n:
        yield Verdict("ok", f"torch sees all {vendor_n} GPU(s)")
        return
    shown = ", ".join(f"{k}={v}" for k, v in limits.items())
    if limits:
        yield Verdict("warn", f"torch sees {torch_n} of {vendor_n} GPUs; {shown} is set",
                      f"The vendor tool reports {vendor_n} GPUs but {shown} hides some from "
                      "torch. Intended for a one-GPU-per-process launcher, a mistake in a job "
                      "script.",
                      "unset " + " ".join(limits) + " (or list every device, e.g. "
                      f"{next(iter(limits))}={','.join(map(str, range(vendor_n)))})")
        return
    devices = "/dev/kfd and /dev/dri/renderD*" if facts.vendor == "amd" else "/dev/nvidia*"
    yield Verdict("fail", f"torch sees {torch_n} of {vendor_n} GPUs",
                  f"The vendor tool reports {vendor_n} GPUs, torch {torch_n}, and no "
                  "*_VISIBLE_DEVICES variable explains it: ranks cannot use the missing GPUs.",
                  f"check access to {devices} (`groups` should list video and render), the "
                  "container's device flags, and `dmesg` for GPU errors")


def _build_matches(facts: Facts) -> bool:
    torch = facts.torch
    if torch is None:
        return True
    if facts.vendor == "amd":
        return bool(torch.hip)
    if facts.vendor == "nvidia":
        return bool(torch.cuda) and not torch.hip
    return True


@rule("torch.build", "torch", """
The torch build decides which GPUs and which collective library can be used: a ROCm build
(torch.version.hip set) uses RCCL on AMD GPUs, a CUDA build NCCL on NVIDIA GPUs, a CPU build
only gloo. A CPU or wrong-vendor build on a GPU node silently trains on the CPU or fails at
init_process_group("nccl"). Reported: torch version, HIP/CUDA version, the RCCL/NCCL version
torch links, and the torch.distributed backends available.
""")
def check_torch_build(facts: Facts) -> Iterable[Verdict]:
    torch = facts.torch
    if torch is None:
        yield Verdict("info", "torch build not captured",
                      "The capture has no torch.json (a hand-assembled bundle?).", "")
        return
    if not torch.version:
        yield Verdict("fail", "torch cannot be imported", torch.error or "import failed",
                      INSTALL_TORCH)
        return
    kind = f"HIP {torch.hip}" if torch.hip else f"CUDA {torch.cuda}" if torch.cuda else "CPU-only"
    lib = ("RCCL" if torch.hip else "NCCL") + f" {torch.nccl_version}" if torch.nccl_version \
        else ("no RCCL/NCCL" if "nccl" not in torch.backends else "RCCL/NCCL version unknown")
    detail = (f"torch {torch.version}, {kind} build, {lib}; backends: "
              f"{', '.join(torch.backends) or 'none'}; sees {torch.gpu_count} GPU(s).")
    if _build_matches(facts):
        yield Verdict("ok" if facts.vendor != "none" or not torch.hip and not torch.cuda
                      else "info", f"torch {torch.version} ({kind})", detail)
        return
    want = "ROCm (HIP)" if facts.vendor == "amd" else "CUDA"
    yield Verdict("fail", f"torch {torch.version} is a {kind} build on a node with "
                  f"{facts.vendor.upper()} GPUs",
                  detail + f" This node needs a {want} build of torch to use its GPUs.",
                  "install the matching wheel, e.g. `pip install torch --index-url "
                  "https://download.pytorch.org/whl/rocm6.4`" if facts.vendor == "amd" else
                  "install a CUDA build of torch (`pip install torch`)")


# A GPU counts as holding memory when this much is in use while its engines are idle: more than
# a driver's or a bare context's few hundred MiB, less than any real job's working set.
IDLE_HELD_BYTES = 2 << 30
IDLE_HELD_FRACTION = 0.05


@rule("gpu.idle-memory", "gpu", """
Before a job starts its GPUs should be empty. VRAM in use while the GPU's engines are idle
(0% activity, from nvidia-smi / amd-smi / rocm-smi tables, amd-smi metric or the vendor
library) means something still holds memory: a process left behind by an earlier job (a rank
that did not exit, a notebook kernel), or a context a hung job left in the driver. The new job
then runs out of memory or, worse, shares the GPU with a zombie that still drives NCCL/RCCL
traffic. Flagged: at least 2 GiB or 5% of the GPU's memory in use at 0% activity.
""")
def check_idle_memory(facts: Facts) -> Iterable[Verdict]:
    usage = facts.usage
    held = []
    for gpu in usage.gpus:
        fraction = usage.used_fraction(gpu)
        if gpu.util_percent != 0 or fraction is None:
            continue
        if fraction >= IDLE_HELD_FRACTION or (gpu.mem_used_bytes or 0) >= IDLE_HELD_BYTES:
            amount = (human_bytes(gpu.mem_used_bytes) if gpu.mem_used_bytes is not None
                      else f"{fraction:.0%}")
            held.append(f"GPU {gpu.index}: {amount} in use" + (
                f" of {human_bytes(gpu.mem_total_bytes)}" if gpu.mem_total_bytes else ""))
    if not held:
        return
    idle = {g.index for g in usage.gpus if g.util_percent == 0}
    owners = [f"pid {p.pid} {p.name} on GPU {p.gpu}" + (
        f" ({human_bytes(p.mem_bytes)})" if p.mem_bytes else "")
        for p in usage.processes if p.gpu in idle]
    who = (f" Processes: {listing(owners)}." if owners else
           " No process is listed: a context left by a hung or killed job." if
           usage.processes_listed else "")
    tool = "amd-smi process / rocm-smi --showpids" if facts.vendor == "amd" else \
        "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"
    reset = "amd-smi reset -G -g N (rocm-smi --gpureset -d N)" if facts.vendor == "amd" \
        else "nvidia-smi -r -i N"
    yield Verdict("warn", f"GPU memory held while idle: {listing(held)}",
                  f"0% activity with memory in use (from {usage.source}).{who}",
                  f"list the processes ({tool}), end them (kill PID, or scancel the job that "
                  f"left them), and if memory stays held with no process, reset the GPU "
                  f"({reset}) or reboot the node")
