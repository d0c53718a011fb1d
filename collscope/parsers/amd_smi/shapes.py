"""amd-smi's two input shapes, the indented text tree and --json, read into one nested dict
per GPU."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from collscope.parsers.amd_smi.values import KV, MAX_DEPTH, int_of
from collscope.parsers.common import MAX_GPUS, to_int


def looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def load_json(text: str, warnings: list[str]) -> Any:
    """Decoded JSON, tolerating log lines before it; None (with a warning) when invalid."""
    stripped = text.strip()
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    if not starts:
        warnings.append("no JSON found")
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(stripped, min(starts))
    except (ValueError, RecursionError) as error:
        warnings.append(f"invalid JSON: {str(error)[:80]}")
        return None
    return data


def lower_keys(node: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        return None
    if isinstance(node, dict):
        return {str(k).strip().lower(): lower_keys(v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [lower_keys(item, depth + 1) for item in node]
    return node


def gpu_items(data: Any) -> list[dict[str, Any]]:
    """Per-GPU objects from a list, {"gpu_data": [...]}, or a single {"gpu": n, ...}."""
    if isinstance(data, dict):
        if isinstance(data.get("gpu_data"), list):
            data = data["gpu_data"]
        elif "gpu" in data and not isinstance(data.get("gpu"), (list, dict)):
            data = [data]
        else:
            lists = [v for v in data.values() if isinstance(v, list)]
            data = [item for items in lists for item in items]
    if not isinstance(data, list):
        return []
    return [item for item in data if isinstance(item, dict) and "gpu" in item]


def index_of(item: dict[str, Any], warnings: list[str]) -> int | None:
    index = int_of(item.get("gpu"))
    if index is None or index < 0 or index >= MAX_GPUS:
        warnings.append(f"GPU id {str(item.get('gpu'))[:20]!r} not understood")
        return None
    return index


def json_gpu_items(text: str, warnings: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(GPU index, its object with lower-case keys) for each GPU entry of amd-smi's --json
    that names a usable index, in order (a bad index is warned about and skipped)."""
    for item in gpu_items(lower_keys(load_json(text, warnings))):
        index = index_of(item, warnings)
        if index is not None:
            yield index, item


def _json_gpus(text: str, warnings: list[str]) -> dict[int, dict[str, Any]]:
    return dict(json_gpu_items(text, warnings))


def _text_gpus(text: str, warnings: list[str]) -> dict[int, dict[str, Any]]:
    """The indented 'GPU: n' blocks as nested dicts with lower-case, snake-cased keys.

    A line that is not 'KEY: value' continues the previous value: amd-smi wraps long lists
    such as JPEG_ACTIVITY over several lines.
    """
    gpus: dict[int, dict[str, Any]] = {}
    top_indent: int | None = None
    stack: list[tuple[int, dict[str, Any]]] = []
    last_leaf: tuple[dict[str, Any], str] | None = None
    outside = 0  # lines outside any 'GPU: n' block (CPU blocks, damaged headers)
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        line = raw.replace("\t", "    ")
        indent = len(line) - len(line.lstrip(" "))
        match = KV.match(line)
        key = "_".join(match.group("key").lower().split()) if match else ""
        value = (match.group("value") or "").strip() if match else ""
        if match and (top_indent is None or indent <= top_indent):
            if key == "gpu":
                index = to_int(value)
                if index is None or index < 0 or index >= MAX_GPUS:
                    warnings.append(f"line {lineno}: GPU id {value[:20]!r} not understood")
                    stack, last_leaf = [], None
                    continue
                top_indent = indent
                gpus[index] = {}
                stack, last_leaf = [(indent, gpus[index])], None
                continue
            if top_indent is not None:  # 'CPU: 0' and other top-level blocks end the GPU
                stack, last_leaf = [], None
                continue
        if not stack:
            outside += 1
            continue
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if match and indent > stack[-1][0]:
            if value:
                parent[key] = value
                last_leaf = (parent, key)
            else:
                child: dict[str, Any] = {}
                parent[key] = child
                stack.append((indent, child))
                last_leaf = None
        elif last_leaf is not None and indent > stack[0][0]:
            node, leaf = last_leaf
            node[leaf] = f"{node[leaf]} {raw.strip()}"
        else:
            warnings.append(f"line {lineno}: not understood: {raw.strip()[:60]!r}")
    if outside:
        warnings.append(f"{outside} line(s) outside any 'GPU: n' block ignored")
    return gpus


def load_gpus(text: str, warnings: list[str]) -> dict[int, dict[str, Any]]:
    gpus = _json_gpus(text, warnings) if looks_like_json(text) else _text_gpus(text, warnings)
    if not gpus:
        warnings.append("no GPU entries found")
    return gpus
