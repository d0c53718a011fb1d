"""Rank and host from a dump's file name, whatever the prefix (pure).

Dumpers name files ``<prefix><rank>``: torch's default ``nccl_trace_rank_5``, ``_dump_5``
(resiliency-ext), ``fr-dump-5.json``, or a prefix that carries the host
(``job4711_node-02_5``, which torch's analyser cannot read: pytorch#140879). The rank is the
last number of the name once compression and format suffixes are removed; the host is the part
of the name that differs between files of one set (``node-01`` / ``node-02``), which one file
alone cannot show."""

from __future__ import annotations

import os.path
import re
from collections.abc import Sequence
from typing import Any

SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".json", ".pkl", ".pickle", ".bin", ".txt", ".log")
_TRAILING_NUMBER = re.compile(r"(\d+)\D*$")
_TOKEN_SPLIT = re.compile(r"[_.]+")


def stem(path: str) -> str:
    """The file name without its format and compression suffixes."""
    name = os.path.basename(path)      # PurePath's parsing cost 40 us, 0.6 s at 16 384 dumps
    changed = True
    while changed:
        changed = False
        for suffix in SUFFIXES:
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                name, changed = name[: -len(suffix)], True
    return name


def rank_and_host(path: str, own_rank: Any = None) -> tuple[int, str | None]:
    """(rank, None): the dump's own rank field where it has one, else the name's last number;
    ValueError naming what is accepted when neither exists. Hosts come from ``hosts_from_names``
    (a set of names is needed)."""
    if isinstance(own_rank, int) and own_rank >= 0:
        return own_rank, None
    match = _TRAILING_NUMBER.search(stem(path))
    if not match:
        raise ValueError("cannot tell the rank: the dump has no rank field and the file name "
                         "ends in no number (name dumps <prefix><rank>, e.g. nccl_trace_rank_5)")
    return int(match.group(1)), None


def _prefix_tokens(path: str) -> list[str]:
    name = stem(path)
    match = _TRAILING_NUMBER.search(name)
    head = name[: match.start(1)] if match else name
    return [t for t in _TOKEN_SPLIT.split(head) if t]


def hosts_from_names(paths: Sequence[str]) -> dict[str, str]:
    """{path: host} where the names of ``paths`` differ in one token that is not a number
    alone (``job4711_node-01_0``, ``job4711_node-02_4``: node-01, node-02); {} when the names
    share their prefix (no host in them) or differ in more than one place."""
    tokens = {path: _prefix_tokens(path) for path in paths}
    lengths = {len(t) for t in tokens.values()}
    if len(paths) < 2 or len(lengths) != 1:
        return {}
    varying = [i for i in range(lengths.pop())
               if len({t[i] for t in tokens.values()}) > 1]
    if len(varying) != 1:
        return {}
    at = varying[0]
    if all(t[at].isdigit() for t in tokens.values()):
        return {}
    return {path: t[at] for path, t in tokens.items()}
