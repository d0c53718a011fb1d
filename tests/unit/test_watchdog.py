"""The watchdog names the step a rank waits in; a nested step hands the watch back."""

from __future__ import annotations

import time

from collscope.runtime.watchdog import Watchdog


def test_nested_step_restores_the_outer_step_and_its_watch():
    watchdog = Watchdog(60.0, 0)
    try:
        with watchdog.step("outer"):
            with watchdog.step("inner"):
                assert watchdog._what == "inner"
            assert watchdog._what == "outer"           # still watched, under its own name
            assert watchdog._deadline <= time.monotonic() + 60.0
            assert watchdog._deadline > time.monotonic() + 59.0
        assert watchdog._what is None and watchdog._deadline == float("inf")
    finally:
        watchdog.close()


def test_nested_step_after_a_long_inner_step_gives_the_outer_a_full_timeout():
    watchdog = Watchdog(60.0, 0)
    try:
        with watchdog.step("outer"):
            watchdog._deadline -= 59.5   # the outer step began 59.5 s ago
            with watchdog.step("inner"):
                pass
            # The inner step's end was progress: no stale deadline half a second away.
            assert watchdog._deadline > time.monotonic() + 59.0
    finally:
        watchdog.close()
