"""Shared test fixtures.

Real third-party tool outputs live in ../shared/fixtures (beside the clone in CI). Tests read
them in place; they are never copied here. Locally a test that needs them skips where the folder
is absent; under CI (CI=true, as .ci/run sets) the run fails instead, so a green CI always means
the real-data tests ran.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests judge correctness, never speed: no per-example deadline (hypothesis' default
# 200 ms fails a test when a loaded 2-core CI host stalls one example).
settings.register_profile("collscope", deadline=None)
settings.load_profile("collscope")

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
OWN_FIXTURES = REPO / "tests" / "fixtures"
HOW_TO_GET = ("put the project's shared/ folder beside this clone "
              f"(expected at {SHARED_FIXTURES})")


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing_fixtures_error(in_ci: bool, present: bool) -> str | None:
    """Why the run must stop: only under CI, and only when the shared fixtures are absent."""
    if in_ci and not present:
        return f"CI=true but ../shared/fixtures is missing: {HOW_TO_GET}"
    return None


def pytest_configure(config: pytest.Config) -> None:
    error = missing_fixtures_error(running_in_ci(), SHARED_FIXTURES.is_dir())
    if error:
        raise pytest.UsageError(error)


def shared_fixture(*parts: str) -> Path:
    """Path of a file under ../shared/fixtures; skips the test when it is absent."""
    path = SHARED_FIXTURES.joinpath(*parts)
    if not path.exists():
        if running_in_ci():
            pytest.fail(f"shared fixture {path} is missing under CI")
        pytest.skip(f"shared fixture {path} not present: {HOW_TO_GET}")
    return path


@pytest.fixture
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"../shared/fixtures not present: {HOW_TO_GET}")
    return SHARED_FIXTURES
