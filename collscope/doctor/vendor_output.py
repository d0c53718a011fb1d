"""What vendor libraries printed while loading, as a doctor finding (rule gpu.vendor-library).

The hw gateway catches their output at the file-descriptor level (collscope.hw.capture), so
it never lands in `--json`; probes save it in the bundle as VENDOR_OUTPUT_FILE and this rule
says what it means: usually a Python binding installed without its native library.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from collscope.doctor.checks import Verdict, rule

VENDOR_OUTPUT_FILE = "vendor-library-output.json"
MISSING_LIBRARY_MARKERS = ("cannot open shared object", "unable to find", "not found",
                           "no such file", "failed to load")
NATIVE_LIBRARY = {"amdsmi": "libamd_smi.so (ROCm's amd-smi-lib)",
                  "pynvml": "libnvidia-ml.so (the NVIDIA driver)"}
FIX = {"amdsmi": "install ROCm's amd-smi-lib (or set ROCM_PATH to the ROCm install); on a "
                 "node without AMD GPUs, pip uninstall amdsmi",
       "pynvml": "install the NVIDIA driver (libnvidia-ml.so); on a node without NVIDIA GPUs, "
                 "pip uninstall nvidia-ml-py"}


def capture_files() -> dict[str, str]:
    """The bundle file for what this process's vendor libraries printed (none when silent)."""
    from collscope.hw.capture import printed

    output = printed()
    return {VENDOR_OUTPUT_FILE: json.dumps(output, indent=1, sort_keys=True)} if output else {}


def from_capture(capture: dict[str, str]) -> dict[str, str]:
    """library -> printed text, from a capture or bundle; {} when absent or unreadable."""
    try:
        data: Any = json.loads(capture.get(VENDOR_OUTPUT_FILE, "{}"))
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}


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
def check_vendor_library(facts: Any) -> Iterable[Verdict]:
    for library, text in sorted(getattr(facts, "vendor_output", {}).items()):
        lines = _lines(text)
        if not lines:
            continue
        detail = " | ".join(lines[:4])[:400]
        if any(marker in text.lower() for marker in MISSING_LIBRARY_MARKERS):
            native = NATIVE_LIBRARY.get(library, "its native library")
            yield Verdict("warn", f"{library} is installed but its library is missing: "
                          f"{native}", f"What {library} printed while loading: {detail}",
                          FIX.get(library, ""))
        else:
            yield Verdict("info", f"{library} printed {len(lines)} line(s) while loading",
                          detail, "")
