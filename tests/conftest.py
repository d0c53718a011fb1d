"""Shared test fixtures.

The data the tests read lives in tests/fixtures/ inside the repository: real third-party tool
outputs, logs, traces and dumps, one folder per kind, each with a SOURCES.md that says where its
files came from and under which licence; collscope's own hand-made samples of the same formats
under own/ (a README.md per folder says what each exercises). A clone of the repository alone
runs the whole suite; a missing fixture file is a failure, never a skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Property tests judge correctness, never speed: no per-example deadline (hypothesis' default
# 200 ms fails a test when a loaded 2-core CI host stalls one example).
settings.register_profile("collscope", deadline=None)
settings.load_profile("collscope")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
OWN_FIXTURES = FIXTURES / "own"


def fixture_path(*parts: str) -> Path:
    """Path of a file or folder under tests/fixtures; a missing one fails the test."""
    path = FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"fixture {path} is missing from the repository")
    return path


# Tests that judge speed or wall time (a duration, a bandwidth, a lateness, a speed-up, how
# soon something ends) are marked serial, per test or with pytestmark for a module: `make test`
# runs every other test on every core first (-m "not serial" -n auto: the unit tests and the
# rank-running tests that check correctness only), then these one at a time (-m serial), so a
# timing test never shares the cores with another test.
