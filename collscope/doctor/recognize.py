"""Which tool wrote a file, from its content: bundles assembled by hand, outputs pasted into a
ticket, and files named as their authors pleased are read for what they are.

``identify(text)`` returns the bundle file name (``probes`` names, the bundle's public format)
of the first kind whose signature the text carries; ``place(capture)`` moves every file that
is not under a bundle name into the slot its content belongs to, when that slot is empty, and
lists the files recognised as nothing. Files under bundle names are checked too: one that
holds another tool's output is moved to that tool's slot, one that holds a GPU tool's own
failure message ("NVIDIA-SMI has failed ...", "rocm-smi: command not found") is reported as
that failure instead of being read as an empty GPU list, and one that matches nothing is
named. Signatures are
lines each tool has printed unchanged across its releases (rocm-smi's banners since ROCm 5.0,
amd-smi's table titles since 6.0, nvidia-smi's box header since driver 418); JSON is
recognised by its keys.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from collscope.doctor import probes
from collscope.parsers import ibstat, nvidia_smi, smi_tables
from collscope.parsers.amd_smi.shapes import load_json
from collscope.parsers.common import json_start
from collscope.parsers.line_prefix import strip_launcher_prefix

# Bundle files that are not tool outputs (never moved, never "unrecognised").
CONTEXT_FILES = (probes.ENV_FILE, probes.COMMANDS_FILE, probes.HOST_FILE, probes.TORCH_FILE,
                 probes.SELFTEST_FILE, probes.HW_INVENTORY_FILE)
# Extra slots for outputs doctor reads but does not run itself.
AMD_SMI_TABLE = "amd-smi.txt"
AMD_SMI_MONITOR = "amd-smi-monitor.txt"
AMD_SMI_METRIC = "amd-smi-metric.txt"
NVIDIA_SMI_TABLE = "nvidia-smi.txt"
IBSTAT = "ibstat.txt"


def _json(text: str) -> Any:
    """The JSON document of a tool's --json output (after any warning lines it printed first)."""
    start = json_start(text)
    if start is None:
        return None
    return load_json(text[start:], [])


def _keys(doc: Any) -> set[str]:
    """Keys of the document and of its first-level children (lower-cased)."""
    found: set[str] = set()
    items = doc if isinstance(doc, list) else [doc]
    if isinstance(doc, dict) and len(doc) == 1 and isinstance(next(iter(doc.values())), list):
        items = next(iter(doc.values()))          # {"gpu_data": [...]}
    for item in items[:4]:
        if isinstance(item, dict):
            found |= {str(k).lower() for k in item}
            for value in item.values():
                if isinstance(value, dict):
                    found |= {str(k).lower() for k in value}
    return found


def _item_keys(doc: Any) -> set[str]:
    """Keys of the document's items only (not of their children)."""
    items = doc if isinstance(doc, list) else [doc]
    if isinstance(doc, dict) and len(doc) == 1 and isinstance(next(iter(doc.values())), list):
        items = next(iter(doc.values()))
    return {str(k).lower() for item in items[:4] if isinstance(item, dict) for k in item}


def _amd_json(doc: Any, *wanted: str) -> bool:
    keys = _keys(doc)
    return "gpu" in keys and any(w in keys for w in wanted)


def _has(*patterns: str, flags: int = 0) -> Callable[[str], bool]:
    compiled = [re.compile(p, flags | re.M) for p in patterns]
    return lambda text: all(c.search(text) for c in compiled)


# (slot, text test, JSON test) in order: more specific kinds before the ones they contain.
SIGNATURES: tuple[tuple[str, Callable[[str], bool] | None, Callable[[Any], bool] | None], ...] = (
    (AMD_SMI_TABLE, smi_tables.looks_like_amd_smi_table, None),
    (NVIDIA_SMI_TABLE, smi_tables.looks_like_nvidia_smi, None),
    (AMD_SMI_MONITOR, smi_tables.looks_like_amd_smi_monitor, None),
    ("amd-smi-topology.txt", _has(r"^(?:ACCESS|WEIGHT|HOPS|LINK TYPE|NUMA BW) TABLE:"),
     lambda d: "links" in _item_keys(d) and "link_metrics" not in _item_keys(d)),
    (AMD_SMI_METRIC, _has(r"^GPU: \d+", r"^\s+(?:USAGE|POWER|PCIE|MEM_USAGE|ECC):\s*$"),
     lambda d: _amd_json(d, "usage", "mem_usage", "power")),
    ("amd-smi-static.txt", _has(r"^GPU: \d+", r"^\s+(?:ASIC|BUS|VBIOS|BOARD|DRIVER|VRAM):\s*$"),
     lambda d: _amd_json(d, "asic", "vbios", "board", "bus")),
    ("rocm-smi.txt", _has(r"^=+ (?:ROCm System Management Interface|Concise Info) =+",
                          r"(?:VRAM%|GPU%|SCLK)"), None),
    ("rocm-smi--showtopo.txt", _has(r"(?:Weight|Link Type|Hops) between two GPUs"),
     lambda d: any(k.startswith("(topology)") for k in _keys(d))),
    ("rocm-smi--showmeminfo-vram.txt", _has(r"VRAM Total Memory \(B\)", flags=re.I),
     lambda d: "vram total memory (b)" in _keys(d)),
    ("rocm-smi--showproductname.txt", _has(r"Card (?:series|Series|model|Model)\s*:"),
     lambda d: "card series" in _keys(d)),
    ("rocminfo.txt", _has(r"^HSA (?:System Attributes|Agents)\s*$"), None),
    ("nvidia-smi-topo-m.txt", _has(r"^\s*GPU0\s.*GPU1|^\s*GPU0\s+X\b", r"Legend:|CPU Affinity"),
     None),
    ("nvidia-smi-query-gpu.csv", _has(r"^\s*(?:index|name|pci\.bus_id|memory\.total|uuid)"
                                      r"(?:\s*\[[^\]]*\])?\s*,"), None),
    ("ucx_info-d.txt", _has(r"^#\s+(?:Memory domain|Transport):"), None),
    ("ucx_info-v.txt", _has(r"^#\s+(?:Library version|UCT version|Version)\s*[:=\d]",
                            r"(?i:ucx|configured with|Git branch)"), None),
    (IBSTAT, ibstat.looks_like_ibstat, None),
    ("ibv_devinfo-v.txt", _has(r"^hca_id:\s*\S"), None),
    # without root lspci prints "Capabilities: <access denied>" in place of the list
    ("lspci-vvv.txt", _has(r"^[0-9a-f]{2,4}:[0-9a-f]{2}[:.][0-9a-f]",
                           r"Capabilities: (?:\[|<access denied>)"),
     None),
    (probes.NCCL_LOG_FILE, _has(r"\b(?:NCCL|RCCL) (?:INFO|WARN)\b"), None),
)
TOOL_SLOTS = tuple(slot for slot, _, _ in SIGNATURES)


def identify_all(text: str) -> list[str]:
    """Every bundle slot whose tool's signature ``text`` carries (a file may hold several
    outputs; ``rocm-smi -a --json`` answers for several slots)."""
    doc = _json(text)
    found = []
    for slot, text_test, json_test in SIGNATURES:
        if doc is not None:
            if json_test is not None and json_test(doc):
                found.append(slot)
        elif text_test is not None and text_test(text):
            found.append(slot)
    return found


def identify(text: str) -> str | None:
    """The bundle slot of the tool that wrote ``text``; None when it is none collscope reads."""
    found = identify_all(text)
    return found[0] if found else None


# A GPU tool's own failure message, saved in place of its output: (pattern, what it means, fix).
# nvidia-smi's texts are NVML's (nvidia-smi(1), NVML error strings); rocm-smi prints "Driver
# not initialized (amdgpu not found in modules)" and amd-smi "AMDSMI_STATUS_DRIVER_NOT_LOADED"
# / "amdgpu driver ... not loaded" when amdgpu is missing; shells print "command not found".
_AMD_DRIVER_FIX = ("load the amdgpu driver (`sudo modprobe amdgpu`; check `dmesg | grep "
                   "amdgpu`), in containers pass --device=/dev/kfd --device=/dev/dri")
_NVIDIA_DRIVER_FIX = ("install or reload the NVIDIA driver (`nvidia-smi` must list the GPUs; "
                      "check `dmesg | grep -i nvrm`); in containers use the NVIDIA container "
                      "toolkit (--gpus all)")
GPU_TOOL_FAILURES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                r"driver", re.I), "nvidia-smi could not reach the NVIDIA driver",
     _NVIDIA_DRIVER_FIX),
    (re.compile(r"Failed to initialize NVML: (?P<why>[^\n]+)", re.I),
     "nvidia-smi could not initialise NVML", "reboot (or reload the nvidia modules) so the "
     "driver matches its user-space library; " + _NVIDIA_DRIVER_FIX),
    (re.compile(r"^No devices were found\s*$", re.M), "nvidia-smi found no GPU",
     _NVIDIA_DRIVER_FIX),
    (re.compile(r"\b(?P<tool>amd-smi|rocm-smi|rocminfo|nvidia-smi)\b[^\n]*(?:command not found|"
                r"No such file or directory)|(?:command not found|not found)[^\n]*\b"
                r"(?P<tool2>amd-smi|rocm-smi|rocminfo|nvidia-smi)\b", re.I),
     "the GPU tool is not installed", "install ROCm's amd-smi / rocm-smi (or add /opt/rocm/bin "
     "to PATH), or the NVIDIA driver utilities (nvidia-smi)"),
    (re.compile(r"Driver not initialized|amdgpu not found in modules|"
                r"AMDSMI_STATUS_DRIVER_NOT_LOADED|amdgpu driver[^\n]*not (?:loaded|found)|"
                r"Unable to (?:open|find) /dev/kfd|HSA_STATUS_ERROR_OUT_OF_RESOURCES", re.I),
     "the AMD GPU tool could not reach the amdgpu driver", _AMD_DRIVER_FIX),
)


@dataclass(frozen=True)
class ToolFailure:
    """A GPU tool's failure message found in a bundle file."""

    file: str
    meaning: str
    line: str          # the message as the tool printed it
    fix: str
    on_stderr: bool = False   # printed on stderr by a tool doctor ran (not in its output)


def tool_failure(name: str, text: str) -> ToolFailure | None:
    """The GPU tool failure ``text`` is, when it is one (short texts only: a real output that
    mentions such a line in passing is still read)."""
    if len(text) > 4096:
        return None
    for pattern, meaning, fix in GPU_TOOL_FAILURES:
        match = pattern.search(text)
        if match:
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.end())
            line = text[start:end if end >= 0 else len(text)].strip()
            return ToolFailure(name, meaning, line[:200], fix)
    return None


def _own_output(name: str, text: str, found: list[str]) -> bool:
    """True when ``text`` is an output of the tool ``name`` is the slot of: its signature, or
    the machine-readable form doctor itself saves there (rocm-smi --json keyed by card,
    --query-gpu CSV without a header)."""
    if name in found:
        return True
    if name.startswith("rocm-smi"):
        doc = _json(text)
        return isinstance(doc, dict) and any(re.fullmatch(r"card\d+", str(k)) for k in doc)
    if name == "ibv_devinfo-v.txt":               # what it prints on a node without RDMA
        return bool(re.match(r"\s*No IB devices found", text))
    if name == "nvidia-smi-query-gpu.csv":     # read exactly when its parser reads GPUs
        return bool(nvidia_smi.parse_query_gpu_any(text, probes.NVIDIA_QUERY_FIELD_SETS).value)
    return False


def _is_tool_output(name: str) -> bool:
    return name not in CONTEXT_FILES and not name.startswith(probes.SYSFS_DIR + "/")


def _without_prefixes(capture: probes.RawCapture) -> tuple[probes.RawCapture, dict[str, str]]:
    """Tool outputs without a launcher prefix on their lines; file -> what was stripped."""
    cleaned: probes.RawCapture = {}
    stripped: dict[str, str] = {}
    for name, text in capture.items():
        if _is_tool_output(name):
            text, warning = strip_launcher_prefix(text)
            if warning is not None:
                stripped[name] = warning
        cleaned[name] = text
    return cleaned, stripped


@dataclass
class Placement:
    capture: probes.RawCapture
    moved: dict[str, str] = field(default_factory=dict)        # file -> slot(s) it was read as
    shadowed: dict[str, str] = field(default_factory=dict)     # file -> slot another file filled
    unrecognised: list[str] = field(default_factory=list)
    failures: list[ToolFailure] = field(default_factory=list)  # GPU tools' error messages
    prefixes: dict[str, str] = field(default_factory=dict)     # file -> prefix stripped
    also: dict[str, str] = field(default_factory=dict)         # own-slot file -> other slots


def place(capture: probes.RawCapture) -> Placement:
    """The capture with each tool output under the slot its content belongs to (after the
    launcher prefix its lines carry, if any, is stripped: ``srun -l``, ``mpirun
    --tag-output``, time stamps)."""
    capture, prefixes = _without_prefixes(capture)
    tool_slots = set(TOOL_SLOTS) | {t.file for t in probes.TOOLS}
    slots = tool_slots | set(CONTEXT_FILES)
    placed: probes.RawCapture = {name: text for name, text in capture.items()
                                 if name in slots or name.startswith(probes.SYSFS_DIR + "/")}
    result = Placement(capture=placed, prefixes=prefixes)
    misplaced = []
    several: list[tuple[str, str, list[str]]] = []
    for name, text in capture.items():
        if not text.strip() or name in CONTEXT_FILES or name.startswith(probes.SYSFS_DIR + "/"):
            continue
        failure = tool_failure(name, text)
        if failure is not None:
            placed.pop(name, None)         # an error message, not an (empty) GPU list
            result.failures.append(failure)
            continue
        found = identify_all(text)
        if name in tool_slots:
            if _own_output(name, text, found):
                if any(slot != name for slot in found):   # several outputs in one file
                    several.append((name, text, [slot for slot in found if slot != name]))
                continue
            if not found:                  # kept for its parser, and named as unread
                result.unrecognised.append(name)
                continue
            del placed[name]               # another tool's output under this name: moved
        misplaced.append((name, text, found))
    for name, text, found in misplaced:
        if not found:
            placed[name] = text
            result.unrecognised.append(name)
            continue
        free = [slot for slot in found if slot not in placed]
        for slot in free:
            placed[slot] = text
        if free:
            result.moved[name] = ", ".join(free)
        else:                              # every slot it fits is taken: said so (and kept,
            if name not in tool_slots:     # unless its name would have it read as another tool)
                placed[name] = text
            result.shadowed[name] = found[0]
    for name, text, others in several:     # rocm-smi.txt holding `rocm-smi -u --showmeminfo`
        free = [slot for slot in others if slot not in placed]
        for slot in free:
            placed[slot] = text
        if free:
            result.also[name] = ", ".join(free)
    return result
