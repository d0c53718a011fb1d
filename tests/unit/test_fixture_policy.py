"""CI must not pass with the real-data tests silently skipped."""

from __future__ import annotations

import pytest

from tests.conftest import missing_fixtures_error, running_in_ci


@pytest.mark.parametrize(("in_ci", "present", "fails"), [
    (True, False, True), (True, True, False), (False, False, False), (False, True, False)])
def test_only_ci_without_fixtures_stops_the_run(in_ci: bool, present: bool, fails: bool) -> None:
    error = missing_fixtures_error(in_ci, present)
    assert (error is not None) == fails
    if error:
        assert "shared/" in error and "beside this clone" in error


@pytest.mark.parametrize(("value", "expected"), [
    ("true", True), ("1", True), ("TRUE", True), ("", False), ("false", False), ("0", False)])
def test_ci_variable(monkeypatch: pytest.MonkeyPatch, value: str, expected: bool) -> None:
    monkeypatch.setenv("CI", value)
    assert running_in_ci() is expected
