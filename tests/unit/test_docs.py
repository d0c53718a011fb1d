"""The documentation stays true (tests/doccheck.py): links resolve, collscope commands parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import doccheck

PAGES = doccheck.doc_files()


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(doccheck.REPO)) for p in PAGES])
def test_every_link_of_the_page_resolves(page: Path) -> None:
    assert doccheck.link_problems(page) == []


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(doccheck.REPO)) for p in PAGES])
def test_every_collscope_command_of_the_page_parses(page: Path) -> None:
    assert doccheck.command_problems(page) == []


def test_the_pages_hold_commands_to_check() -> None:
    # A checker that recognised nothing would pass every page: the docs hold dozens.
    commands = [c for page in PAGES for c in doccheck.command_lines(page.read_text())]
    assert len([c for c in commands if not c[2]]) > 40
    assert len([c for c in commands if c[2]]) >= 12        # a synopsis per command page


def _page(tmp_path: Path, name: str, text: str) -> Path:
    page = tmp_path / name
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    return page


def test_a_broken_link_or_anchor_is_named_with_its_line(tmp_path: Path) -> None:
    _page(tmp_path, "docs/bench.md", "# Bench\n\n## `--json` and exit codes\n\n## Limits\n"
          "## Limits\n<a id=\"own-id\"></a>\n")
    page = _page(tmp_path, "README.md", "\n".join([
        "[ok](docs/bench.md) [ok](docs/bench.md#--json-and-exit-codes) [ok](#top)",
        "[repeat](docs/bench.md#limits-1) [html](docs/bench.md#own-id) [web](https://x.org/a)",
        "[gone](docs/tune.md)",
        "[anchor](docs/bench.md#json-and-exit-codes)",
        "[outside](../beside/notes.md)",
        "`[in code](docs/none.md)`",
        "```", "[in a block](docs/none.md)", "```",
        "[ref]: docs/missing.md",
        "# Top"]))
    assert doccheck.link_problems(page, tmp_path) == [
        "README.md:3: link 'docs/tune.md': no such file docs/tune.md",
        "README.md:4: link 'docs/bench.md#json-and-exit-codes': docs/bench.md has no heading "
        "or id #json-and-exit-codes",
        "README.md:5: link '../beside/notes.md' points outside the repository",
        "README.md:10: link 'docs/missing.md': no such file docs/missing.md"]


def test_a_renamed_flag_fails_in_a_command_a_synopsis_and_a_mention(tmp_path: Path) -> None:
    page = _page(tmp_path, "docs/bench.md", "\n".join([
        "Use `collscope bench --json FILE`; `collscope bench --jsn` is a typo.",  # line 1
        "```",
        "collscope bench [-b MIN] [--jsonl FILE]",                 # 3: synopsis, wrong flag
        "                [--per-rank] [--no-such]",                # its continuation
        "```",
        "```bash",
        "collscope bench -b 1M --json out.jsonl   # fine",          # 7
        "torchrun --nproc-per-node 8 -m collscope bench --itres 5",  # 8: renamed -n/--iters
        "collscope train --nproc 2 && collscope trace tr/ --stepz 1:2",   # 9: second command
        "collscope bench \\",                                      # 10: continued
        "    --per-rnak",
        "collscope benchmark",                                     # 12: no such command
        "```",
        "```",
        "$ collscope links --per-gpu",                            # 15: a prompt, then output
        "collscope links: rank 0: no such flag --foo",
        "```",
        "```python",
        "collscope bench --not-shell",
        "```"]))
    problems = doccheck.command_problems(page, tmp_path)
    assert [p.split(":")[1] for p in problems] == ["3", "8", "9", "10", "12", "1"]
    assert "has no flag --jsonl, --no-such" in problems[0]
    assert "--itres" in problems[1] and "--stepz" in problems[2]
    assert "unrecognized arguments: --per-rnak" in problems[3]
    assert "invalid choice: 'benchmark'" in problems[4]
    assert "`collscope bench --jsn`: collscope bench has no flag --jsn" in problems[5]


@pytest.mark.parametrize("heading, anchor", [
    ("`--json` and exit codes", "--json-and-exit-codes"),
    ("Method: busbw (nccl-tests)", "method-busbw-nccl-tests"),
    ("[The model](model.md) fit_robust", "the-model-fit_robust"),
])
def test_anchors_are_github_heading_ids(heading: str, anchor: str) -> None:
    assert doccheck.github_anchor(heading) == anchor
