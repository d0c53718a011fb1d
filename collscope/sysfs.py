"""Reading kernel directories (sysfs, procfs) that may be absent: one helper for every probe."""

from __future__ import annotations

import os
from pathlib import Path


def list_dir(path: Path | str) -> list[str]:
    """The sorted entry names of ``path``; empty when it is absent or unreadable (a host
    without InfiniBand has no /sys/class/infiniband, a container may hide parts of /sys)."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []
