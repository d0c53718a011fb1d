"""Text output every command shares: the console its tables are printed on (rich on a
terminal, clean Markdown off it) and the writer of the JSON documents some commands write
(JSON Lines records: collscope.records.jsonl). No rich at import (the CLI must start fast)."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from collscope.errors import UsageError

# Set in each local rank collscope.runtime.spawn starts: what a command says once (a
# deprecation) is said by the process that read the command line, not again by its ranks.
SPAWNED_ENV = "COLLSCOPE_SPAWNED"


@contextmanager
def table_console(tty_width: int, plain_width: int, markup: bool = True) -> Iterator[Any]:
    """(rich Console, box style) for tables on stdout. On a terminal: SIMPLE_HEAD boxes, at
    least ``tty_width`` wide. Off a terminal: Markdown boxes (CI logs, pull-request comments)
    rendered ``plain_width`` wide into a buffer, written when the block ends with rich's cell
    padding stripped from line ends, so logs and diffs stay clean; numbers are never cut."""
    from rich import box
    from rich.console import Console

    tty = sys.stdout.isatty()
    buffer = None if tty else io.StringIO()
    console = Console(highlight=False, markup=markup, file=buffer)
    console.width = max(console.width, tty_width) if tty else plain_width
    yield console, box.SIMPLE_HEAD if tty else box.MARKDOWN
    if buffer is not None:
        text = buffer.getvalue()
        sys.stdout.write("\n".join(line.rstrip() for line in text.splitlines()) + "\n")
    sys.stdout.flush()


def write_json(target: str, document: Any, flag: str = "--json", indent: int = 2) -> None:
    """A JSON document to a file or, for '-', to stdout; a file that cannot be written is bad
    input naming ``flag``."""
    import json

    text = json.dumps(document, indent=indent, allow_nan=False) + "\n"
    if target == "-":
        sys.stdout.write(text)
        return
    try:
        with open(target, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as error:
        raise UsageError(f"{flag}: cannot write {target} ({error.strerror or error})") from None
