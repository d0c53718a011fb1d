"""What every parser test checks beyond real values: damaged input never raises, and long lines
parse in linear time.

Samples are real outputs under tests/fixtures (`real`) and our own under tests/fixtures/own
(`own`); `sample_params` makes them pytest
params. `mutated` damages a sample the ways captured output gets damaged, `mutated_json` changes
the shape of a JSON one, and `assert_parsers_never_raise` runs parsers over the damaged texts
under one set of Hypothesis settings; `assert_long_lines_stay_fast` times them on long lines.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collscope.parsers.common import Parsed
from tests.conftest import FIXTURES, OWN_FIXTURES, fixture_path

Parser = Callable[[str], Parsed[Any]]
Check = Callable[[Parser, Parsed[Any]], object]

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --------------------------------------------------------------------------- samples


def real(name: str, folder: str = "tool-outputs") -> str:
    """A real output under tests/fixtures/folder; a missing one fails the test."""
    return fixture_path(folder, name).read_text(encoding="utf-8")


def own(name: str, folder: str = "tool-outputs") -> str:
    """One of our own samples under tests/fixtures/folder."""
    return (OWN_FIXTURES / folder / name).read_text(encoding="utf-8")


def sample_params(
    real_names: Iterable[str], own_names: Iterable[str], folder: str = "tool-outputs"
) -> list[Any]:
    """One pytest param (a path, named by its file) per sample: real outputs under
    tests/fixtures/folder, then our own under tests/fixtures/own/folder."""
    return [pytest.param(FIXTURES / folder / name, id=name) for name in real_names] + [
        pytest.param(OWN_FIXTURES / folder / name, id=name) for name in own_names
    ]


def read_sample(path: Path) -> str:
    """The text of a sample from `sample_params`; a missing one fails the test."""
    if path.is_relative_to(FIXTURES):
        path = fixture_path(*path.relative_to(FIXTURES).parts)
    return path.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- text damage

NUMBER = re.compile(r"\d+(?:\.\d+)?")
# what a number or a word becomes: absent, negative, overflowing, not a number, not ASCII
ODD_VALUES = ["N/A", "-1", "", "0", "1e999", "nan", "inf", "0x", "9" * 40, "1_0", "٣", "１２",
              "null", '"x"', "#", "\\", "*", "-", "é"]
OPS = ["delete", "duplicate", "swap", "substitute", "insert", "truncate", "cut", "number",
       "token"]


def _ending(line: str) -> int:
    """Where a line's end-of-line characters begin."""
    return len(line.rstrip("\r\n"))


@st.composite
def mutated(draw: st.DrawFn, text: str, max_ops: int = 6) -> str:
    """The text damaged by 1 to max_ops edits: lines deleted, duplicated or swapped, characters
    replaced (encoding slips, random unicode), random text inserted as a line or inside one, the
    output or one line cut short, a number or a word replaced by an odd value (N/A, -1, empty,
    1e999, nan, 40 nines, non-ASCII digits, ...)."""
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(OPS))
        if op == "truncate":
            joined = "".join(lines)
            lines = joined[: draw(st.integers(0, len(joined)))].splitlines(keepends=True)
            continue
        if op == "insert":
            at = draw(st.integers(0, len(lines)))
            piece = draw(st.text(max_size=60)) + draw(st.sampled_from(["\n", ""]))
            line = lines[at] if at < len(lines) else ""
            k = draw(st.integers(0, len(line)))
            lines[at : at + 1] = [line[:k] + piece + line[k:]]
            continue
        if op == "number":
            with_numbers = [i for i, line in enumerate(lines) if NUMBER.search(line)]
            if not with_numbers:
                continue
            i = draw(st.sampled_from(with_numbers))
            found = list(NUMBER.finditer(lines[i]))
            match = found[draw(st.integers(0, len(found) - 1))]
            odd = draw(st.sampled_from(ODD_VALUES))
            lines[i] = lines[i][: match.start()] + odd + lines[i][match.end() :]
            continue
        if not lines:
            continue
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        end = _ending(line)
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], line
        elif op == "substitute" and line:
            k = draw(st.integers(0, len(line) - 1))
            lines[i] = line[:k] + draw(st.text(min_size=1, max_size=8)) + line[k + 1 :]
        elif op == "cut":
            lines[i] = line[: draw(st.integers(0, end))] + line[end:]
        elif op == "token":
            tokens = line[:end].split(" ")
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(st.sampled_from(ODD_VALUES))
            lines[i] = " ".join(tokens) + line[end:]
    return "".join(lines)


# --------------------------------------------------------------------------- JSON shape


def _json_containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=4) | st.dictionaries(
        st.text(max_size=10), children, max_size=4
    )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    _json_containers,
    max_leaves=10,
)


def _slots(node: Any, depth: int = 0) -> list[tuple[Any, Any]]:
    """Every (container, key-or-index) in a decoded JSON document."""
    if depth > 20:
        return []
    slots: list[tuple[Any, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            slots.append((node, key))
            slots.extend(_slots(value, depth + 1))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            slots.append((node, index))
            slots.extend(_slots(value, depth + 1))
    return slots


@st.composite
def mutated_json(draw: st.DrawFn, text: str) -> str:
    """Valid JSON of the sample's shape with values replaced by any JSON or removed, which is
    what a changed tool version looks like to the parser (text damage mostly just breaks
    the JSON syntax). Text before the document (a warning line) is dropped."""
    doc = json.loads(text[text.find("{") if text.lstrip()[:1] != "[" else text.find("[") :])
    for _ in range(draw(st.integers(1, 5))):
        slots = _slots(doc)
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        if draw(st.booleans()):
            del container[key]
        else:
            container[key] = draw(JSON_VALUES)
    return json.dumps(doc)


# --------------------------------------------------------------------------- checks


def assert_parsers_never_raise(
    parsers: Sequence[Parser],
    source: Path | str | st.SearchStrategy[str],
    *,
    damage: Callable[[str], st.SearchStrategy[str]] = mutated,
    check: Check | None = None,
    max_examples: int = SETTINGS.max_examples,
) -> None:
    """Every parser returns a Parsed whose warnings are strings, and passes check(parser,
    result), for each text Hypothesis draws: `damage` of a sample (a path from `sample_params`)
    or of a text, or the texts of a strategy."""
    if isinstance(source, Path):
        source = read_sample(source)
    texts = damage(source) if isinstance(source, str) else source

    @settings(SETTINGS, max_examples=max_examples)
    @given(texts)
    def run(damaged: str) -> None:
        for parser in parsers:
            result = parser(damaged)
            name = getattr(parser, "__name__", repr(parser))
            assert isinstance(result, Parsed), name
            assert isinstance(result.warnings, list), name
            assert all(isinstance(w, str) for w in result.warnings), name
            if check is not None:
                check(parser, result)

    run()


LONG = 20_000
LONG_LINES = [
    "=" * LONG + "x",
    " " * LONG + "x",
    "1" * LONG,
    "a" + " " * LONG + ":",
    "  key: a" + " " * LONG + "b",
    "GPU0 " + "1" * LONG + " Gb/s",
    "GPU[" + "1" * LONG + "] : key: value",
    "GPU0 GPU" + "1" * LONG + "\nGPU" + "2" * LONG + " 1",
    "Temp GPU%\n0 " + "1  " * (LONG // 3),
]


def assert_long_lines_stay_fast(
    parsers: Sequence[Parser], lines: Iterable[str], limit_s: float
) -> None:
    """All parsers read all lines within limit_s. A regex that backtracks on long runs (a
    banner of '=' once took a minute for 2,000 characters) turns damaged input into a hang;
    linear parsing takes milliseconds."""
    started = time.perf_counter()
    for text in lines:
        for parser in parsers:
            assert isinstance(parser(text), Parsed)
    elapsed = time.perf_counter() - started
    assert elapsed < limit_s, f"{elapsed:.1f}s, limit {limit_s}s"

# ---------------------------------------------------------------------------------------------
# nccl-tests / rccl-tests logs (the parser's and the report importer's tests)
# ---------------------------------------------------------------------------------------------

REAL_NCCL_TESTS_LOGS = sorted(p.name for p in (FIXTURES / "nccl-tests-logs").glob("*.txt"))


def count_printed_placements(text: str) -> int:
    """Placements printed in a log, counted without the parser: every line that starts like
    a result row (size, count, type, redop) has (tokens - prefix) // 4 placements, the prefix
    being 5 with a root column (13 or 9 tokens) and 4 without (12 or 8)."""
    total = 0
    for line in text.splitlines():
        if re.match(r"^\s*\d+\s+\d+\s+[A-Za-z]\w*\s+[A-Za-z]\w*\s", line):
            tokens = line.split()
            prefix = 5 if len(tokens) % 4 == 1 else 4
            total += (len(tokens) - prefix) // 4
    return total


def nccl_tests_samples() -> list[str]:
    """Every own log and four real ones of different shapes, as text."""
    own, real = OWN_FIXTURES / "nccl-tests-logs", FIXTURES / "nccl-tests-logs"
    paths = sorted(own.glob("*.txt"))
    for name in ("mi300x_2node_16gpu_allreduce_rccl.txt",
                 "h100_2node_16gpu_alltoall_sendrecv_nccl_network_error.txt",
                 "t4_3node_allreduce_nccl_old_error_column_c0.txt",
                 "mi325x_1to8node_allreduce_rccl_egrep_filtered.txt"):
        paths.append(real / name)
    return [Path(p).read_text() for p in paths]


def mutated_nccl_tests_logs() -> st.SearchStrategy[str]:
    """A sample log damaged by up to 8 edits."""
    return st.sampled_from(nccl_tests_samples()).flatmap(lambda text: mutated(text, max_ops=8))
