"""`collscope watch`: live per-rank communication telemetry inside the user's own job.

``import collscope.watch; collscope.watch.start()`` after ``init_process_group`` starts this
rank's agent explicitly; under ``collscope watch -- COMMAND`` the bootstrap does it for every
process that makes a default process group. See docs/watch.md.
"""

from __future__ import annotations

__all__ = ["start"]


def start() -> bool:
    """Start this rank's agent (once); False when there is no default process group yet."""
    from collscope.watch.agent import start as start_agent

    return start_agent()
