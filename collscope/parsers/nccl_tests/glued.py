"""Result rows tangled with NCCL/RCCL debug output (``NCCL_DEBUG=INFO`` writes to the same
stream from other threads, so its lines land inside nccl-tests' own):

- glued in front: ``node1:7085:7100 [3] NCCL INFO Connected all rings     1048576  262144
  float  sum  -1  28.39  36.94 ...``: the debug line lost its newline and the row follows it;
- injected in the middle: ``1048576  262144  float  sum  -1  28.39node1:7085:7100 [3] NCCL
  INFO Channel 00/0 : ...`` and the row's rest (``36.94  64.64  0 ...``) on the next line.

A row is recovered only when the recovered text parses as a complete row with no problem and
as many placements as the block's previous row (both when there is none), and a rejoined row
only when exactly one cut gives times that agree with their algbw (size / time): anything less
stays a warning, since a misread number would be worse than a missing one.
"""

from __future__ import annotations

import re

from collscope.parsers.nccl_tests.records import Row, TableHeader, printed_unit
from collscope.parsers.nccl_tests.table import looks_like_row, parse_row

# NCCL's debug prefix after its host: host:pid:tid [device] NCCL INFO|WARN ... The host is
# found by walking back from the marker (a regex trying every position for the host would be
# quadratic on long lines), at most MAX_HOST_CHARS back: a host name is at most 253.
_DEBUG_MARK = re.compile(r":\d+:\d+\s+\[\d+\]\s+(?:NCCL|RCCL) (?:INFO|WARN|TRACE|ERROR|ABORT)\b")
_HOST_CHAR = re.compile(r"[\w.-]")
MAX_HOST_CHARS = 256
# Cuts tried for a row after debug text: its numbers come early (after the debug message's
# own few), and every try parses the rest of the line.
MAX_ROW_STARTS = 16


def _complete(text: str, number: int, header: TableHeader | None,
              previous: list[Row]) -> Row | None:
    if not looks_like_row(text.split(), header):
        return None
    row, problems = parse_row(text, number, header, previous)
    if row is None or problems:
        return None
    wanted = len(previous[-1].placements()) if previous else 2
    return row if len(row.placements()) == wanted else None


def row_after_debug(line: str, debug_end: int, number: int, header: TableHeader | None,
                    previous: list[Row]) -> Row | None:
    """The intact result row that follows debug text on ``line`` (the debug marker ends at
    ``debug_end``), or None. Rows glued this way need a header: without one the layout is
    guessed from the token count, which a wrong cut would satisfy too easily."""
    if header is None:
        return None
    for tries, match in enumerate(re.finditer(r"(?<!\S)\d+\s", line[debug_end:])):
        if tries >= MAX_ROW_STARTS:
            break
        row = _complete(line[debug_end + match.start():], number, header, previous)
        if row is not None:
            return row
    return None


def _debug_hosts(line: str) -> list[tuple[int, str]]:
    """(start, host) of every way to read a debug prefix's host on ``line``: each suffix of
    the host characters before a marker (``28.39node1:7085:...`` may be glued anywhere)."""
    found = []
    for mark in _DEBUG_MARK.finditer(line):
        end = start = mark.start()
        while start > 0 and end - start < MAX_HOST_CHARS and _HOST_CHAR.match(line[start - 1]):
            start -= 1
        found += [(at, line[at:end]) for at in range(start, end)]
    return found


def row_heads_before_debug(line: str, header: TableHeader | None,
                           hosts: set[str]) -> list[list[str]]:
    """The possible starts of a result row that debug text interrupted (``... -1
    28.39node1:7085:7100 [3] NCCL INFO ...``), most trusted first: cuts before a host of the
    block's device list, then cuts before a host name that starts with a letter. A glued host
    is ambiguous (``317.00666a154`` may be 317.0 then host 0666a154, or 317.00666 then host
    a154), so rejoined_row takes a tier only when exactly one of its cuts reads right."""
    if header is None:
        return []
    known: list[str] = []
    lettered: list[str] = []
    for start, host in _debug_hosts(line):
        head = line[:start]
        if start == 0 or not looks_like_row(head.split(), header):
            continue
        if host in hosts:
            known.append(head)
        elif host[0].isalpha():
            lettered.append(head)
    return [tier for tier in (known, lettered) if tier]


def _times_match_algbw(row: Row) -> bool:
    """nccl-tests' algbw is size / time: the printed pair must agree at printed precision."""
    for _, p in row.placements():
        if p.time_us <= 0:
            return False
        time_slack = printed_unit(p.time_text) / 2
        low = row.size_bytes / (p.time_us + time_slack) / 1e3
        high = row.size_bytes / max(p.time_us - time_slack, 1e-12) / 1e3
        slack = printed_unit(p.algbw_text) / 2 + 1e-9
        if not low - slack <= p.algbw_gbs <= high + slack:
            return False
    return True


def rejoined_row(tiers: list[list[str]], rest: str, number: int, header: TableHeader | None,
                 previous: list[Row]) -> Row | None:
    """The row made of an interrupted head and the next line's rest: in the first tier of
    heads that gives any, the one complete reading whose times agree with its algbw; None when
    there is none or more than one."""
    if header is None:
        return None
    for heads in tiers:
        found = []
        for head in heads:
            row = _complete(head.rstrip() + " " + rest.strip(), number, header, previous)
            if row is not None and _times_match_algbw(row):
                found.append(row)
        if found:
            return found[0] if len(found) == 1 else None
    return None
