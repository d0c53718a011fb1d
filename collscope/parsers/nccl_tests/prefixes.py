"""Line prefixes that launchers and log collectors put before every line of a captured log.

``srun -l`` labels each line with its task id, padded to the width of the largest (`` 0: ``,
``12: ``); ``mpirun --tag-output`` writes ``[1,0]<stdout>:``; ``ts``, journald, ``kubectl logs
--timestamps`` and nccl-tests' own ``-S`` put a time stamp first; ``kubectl logs --prefix`` puts
``[pod/name/container]``. Rather than a list of known prefixes, the prefix is found from the
lines that are certainly nccl-tests' own (the ``# nThread`` / ``#  Rank`` / table header /
footer lines and result rows): the text before their nccl-tests part, generalised to a shape
(digit runs and alphanumeric runs with digits become classes, whitespace runs become ``\\s+``,
everything else stays literal). When one shape covers most of these anchor lines, it is
stripped from every line that starts with it, so launcher, NCCL debug and command lines lose
it too. Line numbers do not change.
"""

from __future__ import annotations

import re
from collections import Counter

# nccl-tests' own lines, after whatever prefix: '#'-lines with known content, and result rows.
_HASH_ANCHOR = re.compile(
    r"#\s*(?:nThread\b|Rank\s+\d+\s|Using devices|\s*size\s+count\b|Avg bus bandwidth|"
    r"Out of bounds values|Collective test (?:starting|concluded)|nccl-tests version|"
    r"\(B\)\s+\(elements\)|\s*out-of-place)")
_ROW_ANCHOR = re.compile(
    r"(?<![\w.:-])\d+\s+\d+\s+[A-Za-z][\w.]*\s+[A-Za-z][\w.]*\s+(?:-?\d+\s+)?"
    r"(?:\d+(?:\.\d+)?(?:e[-+]?\d+)?\s+){2}")
_TOKEN = re.compile(r"\s+|[A-Za-z0-9]+|.", re.S)
MIN_ANCHORS = 2
MIN_COVERAGE = 0.6


def _shape(prefix: str, coarse: bool) -> list[str]:
    """Regex parts for prefixes like ``prefix``: digits and ids vary from line to line."""
    parts = [r"\s*"]
    for token in _TOKEN.findall(prefix.lstrip()):
        if token.isspace():
            parts.append(r"\s+")
        elif token.isdigit():
            parts.append(r"\d+")
        elif token.isalnum() and (coarse or any(c.isdigit() for c in token)):
            parts.append(r"[A-Za-z0-9]+")
        else:
            parts.append(re.escape(token))
    # A run of spaces at the end is padding: any amount (including none) may follow.
    if parts[-1] == r"\s+":
        parts[-1] = r"\s*"
    return parts


def _outer_parts(parts: list[str]) -> list[re.Pattern[str]]:
    """The leading pieces of a layered prefix, longest first, each ending at a space and
    holding a varying number: a launcher's line that lacks the inner tag (``[1,0]<stdout>:``)
    still carries the collector's time stamp before it."""
    cuts = [i for i, part in enumerate(parts) if part == r"\s+" and i < len(parts) - 1]
    return [re.compile("".join(parts[: i + 1])) for i in reversed(cuts)
            if r"\d+" in parts[: i + 1]]


def _anchor_prefix(line: str) -> str | None:
    """The text before the nccl-tests part of an anchor line, or None for other lines."""
    match = _HASH_ANCHOR.search(line)
    if match is None:
        match = _ROW_ANCHOR.search(line)
    return None if match is None else line[: match.start()]


def find_prefix(lines: list[str]) -> list[re.Pattern[str]]:
    """The pattern of the prefix most anchor lines share, then its outer pieces (longest
    first); empty when they share none."""
    prefixes = [p for p in (_anchor_prefix(line) for line in lines) if p is not None]
    if len(prefixes) < MIN_ANCHORS:
        return []
    for coarse in (False, True):
        shapes = Counter("\0".join(_shape(p, coarse)) for p in prefixes if p.strip())
        if not shapes:
            return []
        shape, count = shapes.most_common(1)[0]
        if count >= MIN_COVERAGE * len(prefixes) and count >= MIN_ANCHORS:
            parts = shape.split("\0")
            return [re.compile("".join(parts)), *_outer_parts(parts)]
    return []


def strip_prefix(lines: list[str]) -> tuple[list[str], str | None]:
    """``lines`` without the shared prefix, and a warning (line-numbered) saying what was
    stripped; the lines unchanged and None when there is no shared prefix."""
    found = find_prefix(lines)
    if not found:
        return lines, None
    pattern = found[0]
    stripped: list[str] = []
    touched: list[int] = []
    example = ""
    for number, line in enumerate(lines, start=1):
        match = next((m for m in (p.match(line) for p in found)
                      if m and line[: m.end()].strip()), None)
        if match:
            if match.re is pattern and not example:
                example = line[: match.end()]
            touched.append(number)
            stripped.append(line[match.end():])
        else:
            stripped.append(line)
    if not touched:
        return lines, None
    return stripped, (f"lines {touched[0]}-{touched[-1]}: a line prefix ({example.strip()!r}, "
                      f"pattern {pattern.pattern!r}) stripped from {len(touched)} lines")
