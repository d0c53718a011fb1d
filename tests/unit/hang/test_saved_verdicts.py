"""`collscope hang`'s verdicts on every fixture it reads, pinned byte for byte: the text and the
hang_group / hang_verdict records, as the whole-dump reader gave them before dumps were read
streamed and reduced (tests/fixtures/golden/hang/, one file per case). The streamed path must
give the same bytes, read in this process and by worker processes alike.

``python -m tests.unit.hang.test_saved_verdicts --write`` rewrites them after a deliberate
change of the verdict."""

from __future__ import annotations

import json
import sys

import pytest

from collscope.hang import analyse_paths, analysis_records, render_text
from tests.conftest import FIXTURES, fixture_path

SAVED = FIXTURES / "golden" / "hang"
CASES = {
    **{f"fr__{p.name}": ("flight-recorder", p.name)
       for p in sorted((FIXTURES / "flight-recorder").iterdir()) if p.is_dir()},
    **{f"ras__{p.name}": ("nccl-ras", p.name)
       for p in sorted((FIXTURES / "nccl-ras").iterdir()) if p.suffix in (".txt", ".json")},
}


def verdict_text(parts: tuple[str, ...], **reading: int) -> str:
    """The printed verdict, then the records as JSON lines, the fixtures' folder masked (a set
    of empty dumps: the one line said instead, exit 3)."""
    from collscope.hang.formats import NothingRecorded

    try:
        analysis = analyse_paths([fixture_path(*parts)], **reading)
    except NothingRecorded as nothing:
        return f"nothing recorded: {nothing}\n"
    text = render_text(analysis) + "".join(
        json.dumps(record, sort_keys=True) + "\n" for record in analysis_records(analysis))
    return text.replace(str(FIXTURES), "<fixtures>")


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_verdict_is_the_saved_one(case):
    saved = (SAVED / f"{case}.txt").read_text(encoding="utf-8")
    assert verdict_text(CASES[case]) == saved


@pytest.mark.parametrize("case", [c for c in sorted(CASES) if c.startswith("fr__")])
def test_worker_processes_give_the_saved_verdict(case):
    saved = (SAVED / f"{case}.txt").read_text(encoding="utf-8")
    assert verdict_text(CASES[case], workers=2) == saved


def test_the_streamed_reading_keeps_a_few_entries_per_lane():
    analysis = analyse_paths([fixture_path("flight-recorder", "gloo_skip_4ranks")])
    assert all(d.dropped for d in analysis.dumps)
    assert sum(len(d.entries) for d in analysis.dumps) < 36


def write() -> None:
    """Save the cases that have no saved verdict yet, read whole (reduce=False: the reference
    the streamed reading must equal); saved ones are never rewritten."""
    SAVED.mkdir(parents=True, exist_ok=True)
    for case, parts in CASES.items():
        target = SAVED / f"{case}.txt"
        if not target.exists():
            target.write_text(verdict_text(parts, reduce=False), encoding="utf-8")
            print(case)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write()
