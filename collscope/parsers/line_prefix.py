"""Line prefixes that launchers and log collectors put before every line of a captured output.

``srun -l`` labels each line with its task id, padded to the width of the largest (`` 0: ``,
``12: ``); ``mpirun --tag-output`` writes ``[1,0]<stdout>:``; ``ts``, journald, ``kubectl logs
--timestamps`` put a time stamp first; ``kubectl logs --prefix`` puts ``[pod/name/container]``.
Rather than a list of exact prefixes, the prefix is found from anchor lines (lines a reader
knows, given by the caller): the text before their known part, generalised to a shape (digit
runs and alphanumeric runs with digits become classes, whitespace runs become ``\\s+``,
everything else stays literal). When one shape covers most anchor lines, it is stripped from
every line that starts with it. Line numbers do not change.

nccl-tests logs (parsers.nccl_tests.prefixes) anchor on nccl-tests' own lines; tool outputs
(``strip_launcher_prefix``) anchor on every non-blank line, the candidate being a launcher's
own prefix shape at the line's start, and need a larger share of lines to agree.
"""

from __future__ import annotations

import re
from collections import Counter

_TOKEN = re.compile(r"\s+|[A-Za-z0-9]+|.", re.S)
MIN_ANCHORS = 2
MIN_COVERAGE = 0.6
# Tool outputs have no anchor of their own: nearly every line must carry the same prefix.
TOOL_MIN_COVERAGE = 0.9

# What launchers and collectors put first (one or several, layered): srun -l task labels,
# mpirun --tag-output, ISO-8601 / RFC 3339 stamps (kubectl, docker, ts -s), syslog/journald
# stamps with host and process, and kubectl --prefix.
# Each ends at the one separator its writer adds: the output's own indentation follows.
_STAMP = r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?[ \t]"
_SYSLOG = r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (?:[\w.-]+ [\w./-]+(?:\[\d+\])?: )?"
LAUNCHER_PREFIX = re.compile(
    rf"(?:[ \t]*\d+: |\[\d+,\d+\]<std(?:out|err)>:|{_STAMP}|{_SYSLOG}|\[pod/[^\]\s]+\] )+")


def _shape(prefix: str, coarse: bool, pad_end: bool = True) -> list[str]:
    """Regex parts for prefixes like ``prefix``: digits and ids vary from line to line. With
    ``pad_end`` a run of spaces at the end matches any amount; without, exactly itself (a tool
    output's indentation after the prefix is its own)."""
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
        parts[-1] = r"\s*" if pad_end else re.escape(prefix[len(prefix.rstrip()):])
    return parts


def _outer_parts(parts: list[str]) -> list[re.Pattern[str]]:
    """The leading pieces of a layered prefix, longest first, each ending at a space and
    holding a varying number: a launcher's line that lacks the inner tag (``[1,0]<stdout>:``)
    still carries the collector's time stamp before it."""
    cuts = [i for i, part in enumerate(parts) if part == r"\s+" and i < len(parts) - 1]
    return [re.compile("".join(parts[: i + 1])) for i in reversed(cuts)
            if r"\d+" in parts[: i + 1]]


def shared_prefix(prefixes: list[str], min_coverage: float = MIN_COVERAGE,
                  pad_end: bool = True) -> list[re.Pattern[str]]:
    """The pattern of the prefix most anchor lines share (``prefixes``: the text before each
    anchor line's known part, "" where it has none), then its outer pieces (longest first);
    empty when they share none."""
    if len(prefixes) < MIN_ANCHORS:
        return []
    for coarse in (False, True):
        shapes = Counter("\0".join(_shape(p, coarse, pad_end)) for p in prefixes if p.strip())
        if not shapes:
            return []
        shape, count = shapes.most_common(1)[0]
        if count >= min_coverage * len(prefixes) and count >= MIN_ANCHORS:
            parts = shape.split("\0")
            return [re.compile("".join(parts)), *_outer_parts(parts)]
    return []


def strip_found(lines: list[str], found: list[re.Pattern[str]]) -> tuple[list[str], str | None]:
    """``lines`` without the prefix ``found`` (shared_prefix's answer), and a warning
    (line-numbered) saying what was stripped; the lines unchanged and None when none is."""
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


def strip_launcher_prefix(text: str) -> tuple[str, str | None]:
    """A tool's output without the launcher or collector prefix nearly all of its lines carry
    (srun -l, mpirun --tag-output, time stamps), and the warning saying so; the text unchanged
    and None when its lines share none."""
    lines = text.split("\n")
    candidates = []
    for line in lines:
        if line.strip():
            match = LAUNCHER_PREFIX.match(line)
            candidates.append(match.group(0) if match else "")
    found = shared_prefix(candidates, TOOL_MIN_COVERAGE, pad_end=False)
    stripped, warning = strip_found(lines, found)
    return ("\n".join(stripped), warning) if warning else (text, None)
