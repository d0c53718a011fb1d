"""`collscope hang`: which rank, host and collective a hung or timed-out job waits on, from
PyTorch Flight Recorder dumps and ``ncclras`` output. A pure library (no CLI import):
``analyse_paths`` reads and judges, ``render_text`` prints; see docs/hang.md."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from collscope.errors import UsageError
from collscope.hang.job import analyse_dumps
from collscope.hang.model import Cause
from collscope.hang.outcome import HangAnalysis
from collscope.hang.report import analysis_records, render_text
from collscope.hang.verdict import HangVerdict

__all__ = ["Cause", "HangAnalysis", "HangVerdict", "analyse_paths", "analysis_records",
           "render_text"]


def analyse_paths(paths: Sequence[str | os.PathLike[str]],
                  hosts: Mapping[int, str] | None = None, workers: int | None = None,
                  memory_mib: int | None = None, reduce: bool = True) -> HangAnalysis:
    """Read dump files and folders (any mix of formats) and judge them; UsageError (exit 2,
    one line naming the file) on bad input, NothingRecorded (a UsageError; the CLI's exit 3)
    when every dump is empty. The dumps are streamed (reading.py): ``workers`` processes
    (default: as many as ``memory_mib`` holds) each decode one dump at a time and keep what
    the analysis reads (``reduce``; False keeps every entry, the same verdict)."""
    from collscope.hang.reading import DEFAULT_MEMORY_MIB, read_inputs

    if not paths:
        raise UsageError("PATH: give at least one dump file or folder")
    inputs = read_inputs(list(paths), workers, memory_mib or DEFAULT_MEMORY_MIB, reduce)
    if inputs.dumps:
        from collscope.hang.formats import (
            NothingRecorded,
            nothing_recorded_message,
            recorded_nothing,
        )

        if recorded_nothing(inputs.dumps) and not inputs.ras:
            raise NothingRecorded(nothing_recorded_message(inputs.dumps))
        return analyse_dumps(inputs, hosts)
    if inputs.ras:
        from collscope.hang.ras import analyse_ras

        return analyse_ras(inputs, hosts)
    why = f" ({'; '.join(inputs.skipped[:3])})" if inputs.skipped else ""
    raise UsageError(f"PATH: no Flight Recorder dump or ncclras output in "
                     f"{', '.join(map(str, paths))}{why}")
