"""The result table: its header (column names per placement, root or not, timestamp) and
its rows, read by the header's names or, without a header, by the token count."""

from __future__ import annotations

import re

from collscope.parsers.nccl_tests import patterns
from collscope.parsers.nccl_tests.records import INT, NUM, Placement, Row, TableHeader, parse_num

_TIME_NAMES = ("time", "cputime")


def parse_header(line: str, number: int) -> TableHeader | None:
    matches = list(re.finditer(r"\S+", line))
    names = [m.group() for m in matches]
    while names and names[0].startswith("#") and names[0] != "#wrong":
        names.pop(0)
        matches.pop(0)
    if names[:2] != ["size", "count"]:
        return None
    i = 2
    has_redop = False
    for expected in ("type", "redop"):
        if i < len(names) and names[i] == expected:
            has_redop = has_redop or expected == "redop"
            i += 1
    has_root = i < len(names) and names[i] == "root"
    if has_root:
        i += 1
    groups: list[list[str]] = []
    time_ends: list[int] = []
    timestamp = False
    for match, name in zip(matches[i:], names[i:], strict=True):
        if name == "timestamp":
            timestamp = True
            continue
        if name in _TIME_NAMES or not groups:
            groups.append([])
            time_ends.append(match.end())
        groups[-1].append(name)
    if not groups:
        return None
    return TableHeader(line=number, has_root=has_root, groups=groups, timestamp=timestamp,
                       has_redop=has_redop,
                       time_ends=time_ends)


def looks_like_row(tokens: list[str], header: TableHeader | None = None) -> bool:
    """size, count, a type name, then a redop name; under a header without a redop column
    (old data-movement tables) the type is followed by numbers."""
    if not (len(tokens) >= 5 and INT.match(tokens[0]) is not None
            and INT.match(tokens[1]) is not None
            and re.fullmatch(r"[A-Za-z][\w.]*", tokens[2]) is not None):
        return False
    if header is not None and not header.has_redop:
        return NUM.match(tokens[3]) is not None
    return NUM.match(tokens[3]) is None


_DEFAULT_NEW = ["time", "algbw", "busbw", "#wrong"]
_DEFAULT_OLD = ["time", "algbw", "busbw", "error"]
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_CLOCK = re.compile(r"\d{2}:\d{2}:\d{2}\Z")


def parse_row(line: str, number: int, header: TableHeader | None,
               previous: list[Row]) -> tuple[Row | None, list[str]]:
    matches = list(re.finditer(r"\S+", line))
    tokens = [m.group() for m in matches]
    problems: list[str] = []
    has_redop = header is None or header.has_redop
    if header is not None:
        has_root = header.has_root
        groups = header.groups
    else:
        # No header in this block (grep-filtered log): the layout from the token count.
        if previous:
            has_root = previous[-1].root is not None
        else:
            has_root = (INT.match(tokens[4]) is not None
                        and (len(tokens) - 5) % 4 == 0) or (len(tokens) - 4) % 4 != 0
        group = _DEFAULT_NEW if has_root else _DEFAULT_OLD
        groups = [group, group]
    prefix = 3 + has_redop + has_root
    if has_root and (len(tokens) < prefix or INT.match(tokens[prefix - 1]) is None):
        return None, ["table row not understood (no root column)"]
    size, count = int(tokens[0]), int(tokens[1])
    root = int(tokens[prefix - 1]) if has_root else None
    values = matches[prefix:]
    timestamp = None
    if header is not None and header.timestamp and len(values) >= 2 and \
            _DATE.match(values[-2].group()) and _CLOCK.match(values[-1].group()):
        timestamp = values[-2].group() + " " + values[-1].group()
        values = values[:-2]
    redop = tokens[3] if has_redop else "none"
    row = Row(line=number, size_bytes=size, count=count, dtype=tokens[2], redop=redop,
              root=root, out_of_place=None, in_place=None, timestamp=timestamp)
    width = len(groups[0])
    if not values:
        return None, ["table row without any measurement"]
    if len(values) >= 2 * width and len(groups) >= 2:
        parts = [(False, values[:width], groups[0]),
                 (True, values[width: width + len(groups[1])], groups[1])]
        if len(values) > width + len(groups[1]):
            extra = " ".join(m.group() for m in values[width + len(groups[1]):])
            problems.append(f"unexpected text after the row ignored ({extra!r})")
    elif len(values) >= width:
        in_place = _single_is_in_place(matches[prefix - 1], values[0], header)
        parts = [(in_place, values[:width], groups[1] if in_place and len(groups) > 1
                  else groups[0])]
        rest = values[width:]
        if rest:
            problems.append(f"row cut short: second placement incomplete "
                            f"({' '.join(m.group() for m in rest)!r}), kept the first")
    else:
        problems.append("row cut short: no complete placement, row dropped")
        return None, problems
    for in_place, fields, names in parts:
        tokens = [m.group() for m in fields]
        if tokens and all(token.upper() == "N/A" for token in tokens):
            continue    # a placement that does not exist (collscope's bench prints N/A)
        placement, problem = _parse_placement(tokens, names)
        where = "in-place" if in_place else "out-of-place"
        if placement is None:
            problems.append(f"{where} part not understood ({problem})")
            continue
        if in_place:
            row.in_place = placement
        else:
            row.out_of_place = placement
    if row.in_place is None and row.out_of_place is None:
        return None, problems
    return row, problems


def row_failure(line: str, header: TableHeader | None) -> str | None:
    """The failure message printed on a row's line after its first columns, e.g.
    ``1048576  262144  float  sum  -1  gpu-1: Test NCCL failure common.cu:1279 '...'``:
    the text from the first word that is not a column value on, when it names a failure."""
    if not patterns.FAILURE.search(line):
        return None
    has_redop = header is None or header.has_redop
    tokens = list(re.finditer(r"\S+", line))
    for match in tokens[3 + has_redop:]:
        token = match.group().rstrip("*")
        if NUM.match(token) is None and token.upper() != "N/A":
            return line[match.start():].strip()
    return None


def _single_is_in_place(last_prefix: re.Match[str], first_value: re.Match[str],
                        header: TableHeader | None) -> bool:
    """Whether a row's only placement is the in-place one, from where it is printed."""
    if header is not None and len(header.time_ends) >= 2:
        end = first_value.end()
        out_end, in_end = header.time_ends[0], header.time_ends[1]
        return abs(end - in_end) < abs(end - out_end)
    # nccl-tests prints the blank out-of-place part as ~32 spaces.
    return first_value.start() - last_prefix.end() > 20


def _parse_placement(tokens: list[str], names: list[str]) -> tuple[Placement | None, str]:
    if len(tokens) < len(names):
        return None, "too few columns"
    values: dict[str, str] = dict(zip(names, tokens[: len(names)], strict=True))
    time_text = values.get("time", values.get("cputime", ""))
    algbw_text = values.get("algbw", "")
    busbw_text = values.get("busbw", "")
    time_us, algbw, busbw = parse_num(time_text), parse_num(algbw_text), parse_num(busbw_text)
    if time_us is None or algbw is None or busbw is None:
        return None, f"time/algbw/busbw {time_text!r} {algbw_text!r} {busbw_text!r}"
    wrong: int | None = None
    error: float | None = None
    over = False
    check_text: str | None = None
    if "#wrong" in values or "error" in values:
        name = "#wrong" if "#wrong" in values else "error"
        check_text = values[name]
        text = check_text
        if text.endswith("*"):
            over, text = True, text.rstrip("*")
        if text.upper() != "N/A":
            number = parse_num(text)
            if number is None or number < 0:
                return None, f"{name} {check_text!r}"
            if name == "#wrong":
                wrong = int(round(number))
            else:
                error = number
    more = {name: value for name, value in values.items()
            if name not in ("time", "cputime", "algbw", "busbw", "#wrong", "error")}
    return Placement(time_us=time_us, algbw_gbs=algbw, busbw_gbs=busbw, wrong=wrong,
                     error=error, time_text=time_text, algbw_text=algbw_text,
                     busbw_text=busbw_text, check_text=check_text, over_threshold=over,
                     more=more), ""
