"""Shared test fixtures.

Real third-party tool outputs live in ../shared/fixtures (beside the clone in CI). Tests read
them in place and skip cleanly where that folder is absent; they are never copied here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
OWN_FIXTURES = REPO / "tests" / "fixtures"


def shared_fixture(*parts: str) -> Path:
    """Path of a file under ../shared/fixtures; skips the test when it is absent."""
    path = SHARED_FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared fixture {path} not present")
    return path


@pytest.fixture
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures not present")
    return SHARED_FIXTURES
