"""Keeps the documentation true: every relative link resolves, every collscope command parses.

Checked files: ``DOC_FILES`` (README.md, CONTRIBUTING.md, docs/*.md, benchmarks/README.md).

Links: every ``[text](target)``, ``![alt](target)`` and ``[ref]: target`` outside code, whose
target is not a URL, names a file or folder of the repository (relative to the page, never
outside the repository), and its ``#anchor`` is a heading of the target page (GitHub's ids:
lower case, punctuation dropped, spaces as hyphens, ``-1``, ``-2`` ... for repeats) or an
``id``/``name`` of an HTML element in it.

Commands: fenced code blocks other than ``python``, ``json`` and ``text`` ones hold shell. In a
block with ``$ `` prompts only the prompted lines are commands (the rest is their output);
elsewhere every line is. A line ending in ``\\`` continues on the next one. Each line is split
into shell words (``&&``, ``|``, ``;``, ``>`` end a command, ``#`` starts a comment), and the
words after each ``collscope`` word (``collscope``, ``.venv/bin/collscope``, ``-m collscope``
behind torchrun, srun or python) are parsed by collscope's real parser
(``collscope.cli.build_parser``): an unknown command, flag or choice fails. A ``collscope``
word followed by ``WORD:`` is a line of output (``collscope bench: rank 0: ...``), not a
command. A synopsis, recognised by its usage notation (``[``, or ``...`` after a placeholder),
holds placeholders rather than values, so it is not parsed: each flag it names must instead be
a flag of that (sub)command; indented lines under it continue it. Inline code in the prose
that starts with ``collscope`` (`collscope bench --json`) is a mention, checked as a synopsis.

``python tests/doccheck.py`` prints every problem, one line each, and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import sys
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOT_SHELL = {"python", "py", "json", "jsonl", "text", "toml", "yaml", "csv"}

_FENCE = re.compile(r"^ {0,3}(```+|~~~+)\s*([\w+-]*)")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_HTML_ID = re.compile(r"""<[a-zA-Z][^>]*\s(?:id|name)=["']([^"']+)["']""")
_INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+\1")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
_COLLSCOPE = re.compile(r"(?:^|[\s/])collscope(?:\s+|$)")     # the word, not collscope_x
_SHELL_OPERATORS = {"&&", "||", "|", ";", "&", ">", ">>", "<", "(", ")", "2>", "&>"}


def doc_files(repo: Path = REPO) -> list[Path]:
    """The pages the test keeps true, in a stable order."""
    pages = [repo / "README.md", repo / "CONTRIBUTING.md", repo / "benchmarks" / "README.md"]
    return [p for p in pages if p.exists()] + sorted((repo / "docs").glob("*.md"))


# ---------------------------------------------------------------------------------------------
# Markdown structure
# ---------------------------------------------------------------------------------------------


Lines = list[tuple[int, str]]          # (line number, text)


def split_blocks(text: str) -> tuple[Lines, list[tuple[str, Lines]]]:
    """(prose lines, fenced code blocks as (language, lines))."""
    prose: Lines = []
    blocks: list[tuple[str, Lines]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            blocks.append((match.group(2).lower(), []))
        elif fence is not None and line.strip().startswith(fence[0] * len(fence)) \
                and not line.strip().strip(fence[0]):
            fence = None
        elif fence is not None:
            blocks[-1][1].append((number, line))
        else:
            prose.append((number, line))
    return prose, blocks


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: markup and punctuation dropped, lower case, '-' for
    spaces (hyphens and underscores kept)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)        # a link: its text
    text = re.sub(r"<[^>]+>", "", text)                               # inline HTML tags
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every id a link into ``page`` may name."""
    prose, _ = split_blocks(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose:
        found.update(_HTML_ID.findall(line))
        match = _HEADING.match(line)
        if not match:
            continue
        base = github_anchor(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


# ---------------------------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------------------------


def link_targets(text: str) -> list[tuple[int, str]]:
    """(line, target) of every link outside code."""
    prose, _ = split_blocks(text)
    targets = []
    for number, line in prose:
        line = _CODE_SPAN.sub("", line)
        targets += [(number, t) for t in _INLINE_LINK.findall(line)]
        definition = _REF_DEFINITION.match(line)
        if definition:
            targets.append((number, definition.group(1)))
    return targets


def link_problems(page: Path, repo: Path = REPO) -> list[str]:
    """One line per link of ``page`` that does not resolve."""
    problems = []
    for number, target in link_targets(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):      # https:, mailto:, ...
            continue
        path_part, _, anchor = target.partition("#")
        where = f"{_shown(page, repo)}:{number}: link {target!r}"
        resolved = (page.parent / path_part).resolve() if path_part else page.resolve()
        if not resolved.is_relative_to(repo.resolve()):
            problems.append(f"{where} points outside the repository")
        elif not resolved.exists():
            problems.append(f"{where}: no such file {_shown(resolved, repo)}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: {_shown(resolved, repo)} has no heading or id "
                            f"#{anchor}")
    return problems


def _shown(path: Path, repo: Path) -> str:
    try:
        return str(path.resolve().relative_to(repo.resolve()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------


def command_lines(text: str) -> list[tuple[int, str, bool]]:
    """(line, text, is_synopsis) of every shell line of the page's code blocks that may hold
    a collscope command (continuations joined, prompts removed)."""
    _, blocks = split_blocks(text)
    found: list[tuple[int, str, bool]] = []
    for language, lines in blocks:
        if language in NOT_SHELL:
            continue
        console = any(line.lstrip().startswith("$ ") for _, line in lines)
        pending: tuple[int, str] | None = None
        for number, line in lines:
            if pending is not None:                       # a continued line
                start, head = pending
                joined = head + " " + line.strip()
                if joined.endswith("\\"):
                    pending = (start, joined[:-1])
                else:
                    pending = None
                    found.append((start, joined, False))
                continue
            if found and found[-1][2] and line[:1].isspace() and line.strip():
                start, head, _ = found[-1]                  # a synopsis' indented line
                found[-1] = (start, head + " " + line.strip(), True)
                continue
            stripped = line.strip()
            if console:
                if not stripped.startswith("$ "):
                    continue
                stripped = stripped[2:]
            if stripped.endswith("\\"):
                pending = (number, stripped[:-1])
                continue
            found.append((number, stripped, is_synopsis(stripped)))
        if pending is not None:
            found.append((pending[0], pending[1], False))
    return [entry for entry in found if _COLLSCOPE.search(entry[1])]


def is_synopsis(line: str) -> bool:
    """Usage notation rather than a command: optional parts in brackets, repeats as '...'."""
    line = re.sub(r"\s#\s.*$", "", line)                     # a trailing shell comment
    return bool(re.search(_COLLSCOPE.pattern + r"[a-z_]+\s.*(\[|[A-Z]\.\.\.)", line))


def mentions(text: str) -> list[tuple[int, str]]:
    """(line, text) of every inline code span of the prose that starts a collscope command
    (`collscope bench --json`), output quoted in the prose (`collscope compare: ...`) left out."""
    prose, _ = split_blocks(text)
    return [(number, match.group(1)) for number, line in prose
            for match in re.finditer(r"`((?:python -m )?collscope [^`]*)`", line)
            if not re.match(r"(?:python -m )?collscope \S+:", match.group(1))]


def invocations(line: str) -> list[list[str]]:
    """The words given to collscope by each collscope command on a shell line."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = list(lexer)
    found = []
    for i, word in enumerate(words):
        if word != "collscope" and not word.endswith("/collscope"):
            continue
        args = []
        for arg in words[i + 1:]:
            if arg in _SHELL_OPERATORS:
                break
            args.append(arg)
        if args and args[0].endswith(":"):                  # output: "collscope bench: ..."
            continue
        found.append(args)
    return found


@cache
def parser() -> argparse.ArgumentParser:
    from collscope.cli import build_parser

    return build_parser()


def parse_error(args: list[str], cli: argparse.ArgumentParser | None = None) -> str | None:
    """argparse's message when ``args`` do not parse, else None."""
    cli = cli or parser()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            cli.parse_args(args)
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            return err.getvalue().strip() or f"exit {exit_.code}"
    return None


def _subcommand(cli: argparse.ArgumentParser, words: list[str],
                ) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the (sub)command named by the leading words, and the words that name it."""
    named: list[str] = []
    for word in words:
        choices = next((a.choices for a in cli._actions
                        if isinstance(a, argparse._SubParsersAction)), None)
        if not choices or word not in choices:
            break
        cli = choices[word]
        named.append(word)
    return cli, named


def synopsis_problem(words_text: str, cli: argparse.ArgumentParser | None = None) -> str | None:
    """The flags of a synopsis that its (sub)command does not have, as one message."""
    after = words_text.split("collscope", 1)[1]
    command, named = _subcommand(cli or parser(), after.split())
    if not named:
        return f"no collscope command named {after.split()[0]!r}" if after.split() else None
    flags = {s for action in command._actions for s in action.option_strings}
    unknown = [f for f in dict.fromkeys(_FLAG.findall(after)) if f not in flags]
    if unknown:
        return f"collscope {' '.join(named)} has no flag {', '.join(unknown)}"
    return None


def command_problems(page: Path, repo: Path = REPO,
                     cli: argparse.ArgumentParser | None = None) -> list[str]:
    """One line per collscope command line (or synopsis) of ``page`` that does not parse."""
    problems = []
    for number, line, synopsis in command_lines(page.read_text(encoding="utf-8")):
        where = f"{_shown(page, repo)}:{number}"
        if synopsis:
            message = synopsis_problem(line, cli)
            if message:
                problems.append(f"{where}: synopsis: {message}")
            continue
        try:
            calls = invocations(line)
        except ValueError as error:                         # unbalanced quotes
            problems.append(f"{where}: not shell words ({error}): {line}")
            continue
        for args in calls:
            message = parse_error(args, cli)
            if message:
                problems.append(f"{where}: `collscope {shlex.join(args)}`: {message}")
    for number, text in mentions(page.read_text(encoding="utf-8")):
        message = synopsis_problem(text, cli)
        if message:
            problems.append(f"{_shown(page, repo)}:{number}: `{text}`: {message}")
    return problems


def all_problems(repo: Path = REPO) -> list[str]:
    return [p for page in doc_files(repo)
            for p in link_problems(page, repo) + command_problems(page, repo)]


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    found = all_problems()
    print("\n".join(found) or "docs: every link resolves and every command parses")
    raise SystemExit(1 if found else 0)
