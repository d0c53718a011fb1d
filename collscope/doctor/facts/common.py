"""Small helpers every facts section uses: JSON files, sysfs copies, notes, env.txt."""

from __future__ import annotations

import json
import re
from typing import Any

from collscope.doctor import probes
from collscope.doctor.facts.records import SYSFS
from collscope.parsers.common import to_int


def read_json(capture: probes.RawCapture, name: str, notes: dict[str, list[str]]) -> Any:
    text = capture.get(name)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        notes.setdefault(name, []).append(f"not JSON: {error}")
        return None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return to_int(value) if isinstance(value, str) else None


def sys_text(capture: probes.RawCapture, path: str) -> str | None:
    text = capture.get(f"{SYSFS}{path}")
    return text.strip() if text is not None else None


def sys_children(capture: probes.RawCapture, directory: str) -> list[str]:
    """Names directly below ``directory`` among the captured sysfs paths (sorted)."""
    prefix = f"{SYSFS}{directory.rstrip('/')}/"
    names = {key[len(prefix):].split("/", 1)[0] for key in capture if key.startswith(prefix)}
    return sorted(n for n in names if n)


def numa_of(text: str | None) -> int | None:
    value = to_int(text or "")
    return value if value is not None and value >= 0 else None


def add_notes(notes: dict[str, list[str]], name: str, warnings: list[str]) -> None:
    if warnings:
        notes.setdefault(name, []).extend(warnings)


def parse_env(text: str) -> dict[str, str]:
    """env.txt (NAME=value lines, ``#`` comments; ``export`` tolerated) -> dict.

    Secrets are left out here too (``redact.shown_env``): hand-made bundles may hold them.
    """
    from collscope.redact import shown_env

    env: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].strip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[name] = value.replace("\\n", "\n").replace("\\\\", "\\")
    return shown_env(env)
