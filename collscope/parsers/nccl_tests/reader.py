"""The line-by-line reader: a state machine that cuts a log into test blocks (see the
package docstring for when a block starts) and fills each block's records."""

from __future__ import annotations

import re

from collscope.parsers.nccl_tests import glued, patterns
from collscope.parsers.nccl_tests.command_line import parse_command_line
from collscope.parsers.nccl_tests.records import (
    CommandLine,
    DeviceLine,
    ParsedTest,
    TestParams,
    clip,
    decode_nccl_version_code,
    parse_num,
)
from collscope.parsers.nccl_tests.table import (
    looks_like_row,
    parse_header,
    parse_row,
    row_failure,
)


class Reader:
    def __init__(self) -> None:
        self.tests: list[ParsedTest] = []
        self.block = ParsedTest(index=0, first_line=1)
        self.seen: set[str] = set()
        self.in_devices = False
        self.cycle: int | None = None
        self.continuing: CommandLine | None = None
        self.noise: tuple[str, int, int, str] | None = None     # category, first, last, text
        self.line_no = 0
        self.command_end = -1       # last line of the latest command line
        self.split_row: tuple[int, str, list[list[str]]] | None = None   # line, text, starts

    # -- blocks --------------------------------------------------------------------------------

    def _has_table(self) -> bool:
        block = self.block
        return bool(block.header or block.rows or block.footer.out_of_bounds is not None
                    or block.footer.avg_busbw_text is not None)

    def _new_block(self, inherit: bool = False) -> None:
        self._flush_noise()
        old = self.block
        old.last_line = max(old.last_line, self.line_no - 1, old.first_line)
        self.tests.append(old)
        block = ParsedTest(index=len(self.tests), first_line=self.line_no)
        if inherit:
            block.commands = list(old.commands)
            block.versions = dict(old.versions)
            block.info = dict(old.info)
            block.program = old.program
            block.params = old.params
        self.block = block
        self.seen = set()
        self.in_devices = False
        self.cycle = None

    def _open(self, kind: str) -> None:
        """Start a new block if a line of ``kind`` cannot belong to the current one."""
        block = self.block
        footer_seen = (block.footer.out_of_bounds is not None
                       or block.footer.avg_busbw_text is not None)
        if kind in ("header", "banner"):
            if block.rows or footer_seen or block.concluded or (
                    kind == "header" and "header" in self.seen):
                self._new_block()
        elif kind == "row":
            if footer_seen or block.concluded:
                self._new_block()
        elif kind == "separator":
            if self._has_table() or block.concluded:
                self._new_block(inherit=True)
        elif kind == "command":
            if self._has_table() or block.concluded:
                self._new_block()
        elif kind in self.seen or self._has_table() or block.concluded:
            self._new_block()

    def _warn(self, message: str) -> None:
        self.block.warnings.append(message)

    # -- noise runs ----------------------------------------------------------------------------

    def _noise(self, category: str, text: str) -> None:
        if self.noise and self.noise[0] == category and self.noise[2] == self.line_no - 1:
            self.noise = (category, self.noise[1], self.line_no, self.noise[3])
            return
        self._flush_noise()
        self.noise = (category, self.line_no, self.line_no, text)

    def _flush_noise(self) -> None:
        if not self.noise:
            return
        category, first, last, text = self.noise
        self.noise = None
        if first == last:
            self._warn(f"line {first}: {category} skipped: {clip(text)!r}")
        else:
            self._warn(f"lines {first}-{last}: {last - first + 1} lines of {category} skipped, "
                       f"first: {clip(text)!r}")

    # -- main ----------------------------------------------------------------------------------

    def feed(self, number: int, raw: str) -> None:
        self.line_no = number
        line = patterns.OUTPUT_TAG.sub("", raw.rstrip("\r\n"))
        stripped = line.strip()
        if self.split_row is not None and self._rejoin(stripped):
            return
        if self.continuing is not None and self._continue_command(stripped):
            return
        if not stripped:
            return
        commented = stripped.startswith("#")
        body = stripped.lstrip("#").strip()
        if not body:
            return
        self._classify(line, stripped, body, commented)
        if self.noise and self.noise[2] != number:
            self._flush_noise()
        self.block.last_line = number

    def _classify(self, line: str, stripped: str, body: str, commented: bool) -> None:
        block = self.block
        if not commented:
            prompt = patterns.PROMPT.match(stripped)
            if prompt and not looks_like_row(stripped.split(), block.header):
                self._command(prompt.group(1))
                return

        match = patterns.NCCL_TESTS_VERSION.search(body)
        if match and body.lower().startswith("nccl-tests"):
            self._open("version")
            self.seen.add("version")
            version, commit, headers, library = match.groups()
            block = self.block
            block.versions["nccl_tests"] = version
            if commit:
                block.versions["nccl_tests_commit"] = commit
            if headers:
                block.versions["nccl_headers"] = decode_nccl_version_code(int(headers))
            if library:
                block.versions.setdefault("nccl", decode_nccl_version_code(int(library)))
            return
        match = patterns.RCCL_TESTS_VERSION.match(body)
        if match:
            self._open("version")
            self.seen.add("version")
            self.block.versions["rccl_tests"] = match.group(1)
            return
        match = patterns.STARTING.match(body)
        if match:
            self._open("starting")
            self.seen.add("starting")
            self.block.started = True
            self.block.program = match.group(1)
            return
        match = patterns.CONCLUDED.match(body)
        if match:
            if block.program and block.program != match.group(1):
                self._warn(f"line {self.line_no}: test concluded as {match.group(1)!r} but "
                           f"started as {block.program!r}")
            elif not block.program:
                block.program = match.group(1)
            block.concluded = True
            return
        if patterns.PARAMS.match(body):
            self._open("params")
            self.seen.add("params")
            self.block.params = _parse_params(body, self.line_no)
            self.in_devices = False
            return
        if patterns.USING_DEVICES.match(body):
            self._open("devices")
            self.seen.add("devices")
            self.in_devices = True
            return
        match = patterns.DEVICE.match(body)
        if match:
            self._device(match)
            return
        if self.in_devices and patterns.DEVICE_CUT.match(body):
            self._warn(f"line {self.line_no}: device line cut short: {clip(stripped)!r}")
            return
        match = patterns.LIB_VERSION.match(body)
        if match:
            name = match.group(1).lower()
            self.block.versions[name] = match.group(2)
            return
        match = patterns.INFO_LINE.match(body)
        if match:
            key = "hostname" if match.group(1).lower() == "hostname" else "library_path"
            self.block.info[key] = match.group(2).strip()
            return
        if patterns.BANNER.search(body) and not looks_like_row(body.split(), block.header):
            self._open("banner")
            self.in_devices = False
            return
        tokens = body.split()
        if len(tokens) >= 2 and tokens[0] == "size" and tokens[1] == "count":
            self._open("header")
            self.seen.add("header")
            self.in_devices = False
            self.block.header = parse_header(line, self.line_no)
            if self.block.header is None:
                self._warn(f"line {self.line_no}: table header not understood: "
                           f"{clip(stripped)!r}")
            return
        if tokens and tokens[0] == "(B)":
            return
        if not commented and looks_like_row(tokens, self.block.header):
            self._open("row")
            self.in_devices = False
            self._row(line)
            return
        if self._footer(body):
            return
        match = patterns.REDUCING.match(body)
        if match:
            self.block.reduced_max_bytes = int(match.group(1))
            self.block.notes.append((self.line_no, body))
            return
        match = patterns.CYCLE.match(body)
        if match:
            self.cycle = int(match.group(1))
            self.block.notes.append((self.line_no, body))
            return
        match = patterns.SEPARATOR.match(body)
        if match:
            self._open("separator")
            self.block.label = match.group(1) or None
            return
        if patterns.ELLIPSIS.fullmatch(body):
            if self.in_devices or (self.block.devices and not self._has_table()):
                self.block.devices_elided = True
                self._warn(f"line {self.line_no}: device list elided with {body!r}; world "
                           "size from the highest rank printed")
            else:
                self._warn(f"line {self.line_no}: part of the log elided ({body!r})")
            return
        if patterns.SNIP.match(body):
            self._warn(f"line {self.line_no}: part of the log cut by whoever posted it "
                       f"({clip(body)!r})")
            return
        self._other(stripped, body, commented)

    def _other(self, stripped: str, body: str, commented: bool) -> None:
        debug = patterns.NCCL_DEBUG.search(stripped)
        if debug:
            version = patterns.DEBUG_VERSION.search(stripped)
            if version:
                self.block.versions.setdefault(version.group(1).lower(), version.group(2))
            if debug.group(1) in ("WARN", "ERROR", "ABORT"):
                self.block.failures.append((self.line_no, stripped))
            row = None if commented else glued.row_after_debug(
                stripped, debug.end(), self.line_no, self.block.header, self.block.rows)
            if row is None:
                self._noise("NCCL/RCCL debug output", stripped)
                return
            self._open("row")
            self.in_devices = False
            row.cycle = self.cycle
            self.block.rows.append(row)
            self._warn(f"line {self.line_no}: NCCL/RCCL debug output before the result row "
                       f"of size {row.size_bytes} skipped: {clip(stripped)!r}")
            return
        if commented:
            match = patterns.ERROR_COMMENT.match(body)
            if match:
                self.block.failures.append((self.line_no, stripped))
                return
            if patterns.KNOWN_COMMENT.match(body):
                self.block.notes.append((self.line_no, body))
                return
            if patterns.ELISION_COMMENT.search(body):
                self.block.notes.append((self.line_no, body))
                self._warn(f"line {self.line_no}: rows or lines left out by whoever posted the "
                           f"log: {clip(stripped)!r}")
                return
            self._warn(f"line {self.line_no}: comment not understood: {clip(stripped)!r}")
            return
        if patterns.FAILURE.search(stripped):
            self.block.failures.append((self.line_no, stripped))
            return
        first = stripped.split()[0].rsplit("/", 1)[-1]
        if (first in patterns.LAUNCHERS or patterns.PERF_BINARY.match(first)) and \
                parse_command_line(stripped).program:
            self._command(stripped)
            return
        if patterns.LAUNCHER_NOISE.match(stripped):
            self._noise("launcher/MPI output", stripped)
            return
        if stripped.startswith("-") and self._options_continue_command(stripped):
            return
        self._warn(f"line {self.line_no}: not understood: {clip(stripped)!r}")

    # -- pieces --------------------------------------------------------------------------------

    def _command(self, text: str) -> None:
        self._open("command")
        text = text.strip()
        if text.endswith("\\"):
            self.continuing = CommandLine(line=self.line_no, text=text[:-1].rstrip(), argv=[])
            return
        self._add_command(text, self.line_no)

    def _add_command(self, text: str, line: int) -> None:
        self.block.commands.append(parse_command_line(text, line))
        self.command_end = self.line_no

    def _options_continue_command(self, stripped: str) -> bool:
        """A line of options right after a command line is its rest, wrapped by whoever
        pasted it without a backslash (``./all_reduce_perf -b 1M -e 8G`` / ``-f 2 -g 1``)."""
        commands = self.block.commands
        if not commands or self.command_end != self.line_no - 1 or not commands[-1].program:
            return False
        last = commands[-1]
        commands[-1] = parse_command_line(last.text + " " + stripped, last.line)
        self.command_end = self.line_no
        return True

    def _continue_command(self, stripped: str) -> bool:
        """Add a continuation line to the command; False when the line is not one (a comment
        or a result row: the paste was cut), which ends the command."""
        assert self.continuing is not None
        if stripped.startswith("#") or looks_like_row(stripped.split(), self.block.header):
            self.block.commands.append(
                parse_command_line(self.continuing.text, self.continuing.line))
            self.continuing = None
            return False
        more = stripped.endswith("\\")
        part = stripped[:-1].rstrip() if more else stripped
        text = (self.continuing.text + " " + part).strip()
        if more:
            self.continuing.text = text
            return True
        self._add_command(text, self.continuing.line)
        self.continuing = None
        return True

    def _device(self, match: re.Match[str]) -> None:
        if "devices" not in self.seen:
            if self._has_table() or self.block.concluded:
                self._new_block()
            self.seen.add("devices")
        elif self._has_table():
            self._new_block()
            self.seen.add("devices")
        self.in_devices = True
        rank, group, pid, host, device, pci, name = match.groups()
        self.block.devices.append(DeviceLine(
            line=self.line_no, rank=int(rank), group=int(group) if group else None,
            pid=int(pid), host=host, device=int(device), pci=pci.strip(),
            name=name.strip() or None))

    def _footer(self, body: str) -> bool:
        footer = self.block.footer
        match = patterns.OOB.match(body)
        if match:
            if footer.out_of_bounds is not None:
                self._warn(f"line {self.line_no}: second 'Out of bounds' line in one test")
            footer.out_of_bounds = int(match.group(1))
            footer.out_of_bounds_status = match.group(2).upper() if match.group(2) else None
            footer.out_of_bounds_line = self.line_no
            return True
        match = patterns.AVG.match(body)
        if match:
            footer.avg_busbw_text = match.group(1)
            footer.avg_busbw_gbs = parse_num(match.group(1))
            footer.avg_busbw_status = match.group(2).upper() if match.group(2) else None
            footer.avg_busbw_line = self.line_no
            if footer.avg_busbw_gbs is None:
                self._warn(f"line {self.line_no}: average bus bandwidth {match.group(1)!r} is "
                           "not a number")
            return True
        match = patterns.BITWISE.match(body)
        if match:
            footer.bitwise_mismatches = int(match.group(1))
            footer.bitwise_status = match.group(2).upper() if match.group(2) else None
            return True
        return False

    def _rejoin(self, stripped: str) -> bool:
        """The line after a row that debug output interrupted: its rest, when the two make a
        complete row; otherwise the interrupted line is read as it is, with its warnings."""
        assert self.split_row is not None
        number, held, heads = self.split_row
        self.split_row = None
        row = glued.rejoined_row(heads, stripped, number, self.block.header, self.block.rows)
        if row is not None:
            row.cycle = self.cycle
            self.block.rows.append(row)
            self._warn(f"lines {number}-{self.line_no}: result row of size {row.size_bytes} "
                       f"split by NCCL/RCCL debug output, rejoined: {clip(held)!r}")
            self.block.last_line = self.line_no
            return True
        current, self.line_no = self.line_no, number
        self._row(held, hold=False)
        self.line_no = current
        return False

    def _row(self, line: str, hold: bool = True) -> None:
        heads = glued.row_heads_before_debug(line, self.block.header,
                                             {d.host for d in self.block.devices}) if hold else []
        if heads:
            self.split_row = (self.line_no, line, heads)   # its rest may be on the next line
            return
        row, problems = parse_row(line, self.line_no, self.block.header, self.block.rows)
        failure = row_failure(line, self.block.header)
        if failure:
            # The test died while printing this row: the cause is on this line, and the
            # columns it cut short are a consequence, not a second problem.
            self.block.failures.append((self.line_no, failure))
            problems = [p for p in problems if "not understood" not in p
                        and "cut short" not in p and "unexpected text" not in p]
        for problem in problems:
            self._warn(f"line {self.line_no}: {problem}: {clip(line)!r}")
        if row is not None:
            row.cycle = self.cycle
            self.block.rows.append(row)

    def finish(self, last_line: int) -> list[ParsedTest]:
        if self.split_row is not None:
            self.line_no, held, _ = self.split_row
            self.split_row = None
            self._row(held, hold=False)
        if self.continuing is not None:
            self.block.commands.append(
                parse_command_line(self.continuing.text, self.continuing.line))
            self.continuing = None
        self._flush_noise()
        self.block.last_line = max(self.block.last_line, min(last_line, self.line_no))
        self.tests.append(self.block)
        return _merge_empty(self.tests)


def _merge_empty(tests: list[ParsedTest]) -> list[ParsedTest]:
    """Fold blocks with nothing of a test in them (noise, prompts) into a neighbour."""
    kept: list[ParsedTest] = []
    pending: ParsedTest | None = None
    for test in tests:
        if pending is not None:
            test.warnings[:0] = pending.warnings
            test.notes[:0] = pending.notes
            if not test.commands:
                test.commands = pending.commands
            test.first_line = min(test.first_line, pending.first_line)
            pending = None
        if test.has_substance:
            kept.append(test)
        else:
            pending = test
    if pending is not None:
        if kept:
            kept[-1].warnings.extend(pending.warnings)
            kept[-1].notes.extend(pending.notes)
            if not kept[-1].commands:
                kept[-1].commands = pending.commands
        elif pending.warnings or pending.commands or pending.notes:
            kept.append(pending)
    for index, test in enumerate(kept):
        test.index = index
    return kept


def _parse_params(body: str, line: int) -> TestParams:
    def grab(pattern: str) -> int | None:
        match = re.search(pattern, body, re.I)
        return int(match.group(1)) if match else None

    params = TestParams(line=line)
    params.n_thread = grab(r"nThread:?\s+(\d+)")
    params.n_gpus = grab(r"nGpus:?\s+(\d+)")
    params.min_bytes = grab(r"minBytes:?\s+(\d+)")
    params.max_bytes = grab(r"maxBytes:?\s+(\d+)")
    step = re.search(r"step:\s*(\d+)\((factor|bytes)\)", body, re.I)
    if step:
        if step.group(2).lower() == "factor":
            params.step_factor = int(step.group(1))
        else:
            params.step_bytes = int(step.group(1))
    params.warmup_iters = grab(r"warmup ?iters:\s*(\d+)")
    params.agg_iters = grab(r"agg ?iters:\s*(\d+)")
    params.iters = grab(r"(?<![A-Za-z] )(?<![A-Za-z])iters:\s*(\d+)")
    params.validation = grab(r"validation:\s*(\d+)")
    params.graph = grab(r"graph:\s*(\d+)")
    params.unalign = grab(r"unalign:\s*(\d+)")
    return params
