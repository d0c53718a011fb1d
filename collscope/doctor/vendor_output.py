"""What vendor libraries printed while loading: the bundle file and its reading.

The hw gateway catches their output at the file-descriptor level (collscope.hw.capture), so
it never lands in `--json`; probes save it in the bundle as VENDOR_OUTPUT_FILE and the rule
gpu.vendor-library (doctor/rules/gpu.py) says what it means: usually a Python binding
installed without its native library.
"""

from __future__ import annotations

import json
from typing import Any

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
