"""``gc_paused``: the cycle collector paused while large decoded inputs are read (profiler
traces, Flight Recorder dumps). What they decode into forms no cycles, yet each collection walks
every object kept so far: 40 % of reading a 100 MB trace (benchmarks/trace_scale.py), 30 % of
decoding a 2,000-entry dump (benchmarks/hang_scale.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cycle collector off inside the block, restored as it was after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
