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
it too. Line numbers do not change. The generic part (shapes, coverage, stripping) is
parsers.line_prefix, shared with doctor's reading of tool outputs.
"""

from __future__ import annotations

import re

from collscope.parsers.line_prefix import shared_prefix, strip_found

# nccl-tests' own lines, after whatever prefix: '#'-lines with known content, and result rows.
_HASH_ANCHOR = re.compile(
    r"#\s*(?:nThread\b|Rank\s+\d+\s|Using devices|\s*size\s+count\b|Avg bus bandwidth|"
    r"Out of bounds values|Collective test (?:starting|concluded)|nccl-tests version|"
    r"\(B\)\s+\(elements\)|\s*out-of-place)")
_ROW_ANCHOR = re.compile(
    r"(?<![\w.:-])\d+\s+\d+\s+[A-Za-z][\w.]*\s+[A-Za-z][\w.]*\s+(?:-?\d+\s+)?"
    r"(?:\d+(?:\.\d+)?(?:e[-+]?\d+)?\s+){2}")


def _anchor_prefix(line: str) -> str | None:
    """The text before the nccl-tests part of an anchor line, or None for other lines."""
    match = _HASH_ANCHOR.search(line)
    if match is None:
        match = _ROW_ANCHOR.search(line)
    return None if match is None else line[: match.start()]


def find_prefix(lines: list[str]) -> list[re.Pattern[str]]:
    """The pattern of the prefix most anchor lines share, then its outer pieces (longest
    first); empty when they share none."""
    return shared_prefix([p for p in (_anchor_prefix(line) for line in lines) if p is not None])


def strip_prefix(lines: list[str]) -> tuple[list[str], str | None]:
    """``lines`` without the shared prefix, and a warning (line-numbered) saying what was
    stripped; the lines unchanged and None when there is no shared prefix."""
    return strip_found(lines, find_prefix(lines))
