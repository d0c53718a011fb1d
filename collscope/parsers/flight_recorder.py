"""One Flight Recorder entry, as torch's JSON dump writes it: the model `watch` (inside the
job, every round) and `hang` (16k dumps after it) both decode into (pure).

The facts of the format (torch's ``FlightRecorder::dump_entries``):

- ``process_group`` is ``(name, description)``; ``pg_config`` maps a name to its ``ranks``,
  the text of a list of global ranks (``"[]"`` where the backend lists none).
- ``collective_seq_id`` counts a rank's collectives in one group, ``p2p_seq_id`` its
  point-to-point ops there, ``op_id`` every op of the group.
- ``profiling_name`` is ``<backend>:<op>``, p2p ops ``nccl:send 0->1`` / ``nccl:recv 1<-0``
  in group-local ranks.
- an entry is done when ``retired`` (gloo, and NCCL once the watchdog saw it end) or its
  ``state`` is ``completed``; ``duration_ms`` appears only where timing is on.

The fields every reader compares are typed as torch writes them; those only a kept entry shows
(sizes, dtypes, frames, start/complete times) stay raw JSON bytes, decoded when asked: a read
of the whole ring builds no list per entry (hang's 2x, benchmarks/hang_scale.py; watch reads
only the sizes of entries it times). Decoding raises msgspec's errors on a document of another
shape: ``hang`` then reads it with the generic decoder, ``watch``'s agent says so and stops.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

P2P_OPS = ("send", "recv")
_ABSENT = Raw()           # an empty Raw: the field is not in the document


class FlightEntry(Struct, gc=False):
    """One entry; the names are torch's. ``get``, ``[]`` and ``in`` answer as the entry's dict
    would, so a reader of pickled dumps (dicts) and of these reads both alike."""

    record_id: int
    pg_id: int
    process_group: tuple[str, str]
    collective_seq_id: int
    p2p_seq_id: int
    op_id: int
    profiling_name: str
    state: str
    retired: bool
    time_created_ns: int
    is_p2p: bool = False
    duration_ms: float | None | UnsetType = UNSET
    input_sizes: Raw = _ABSENT
    input_dtypes: Raw = _ABSENT
    output_sizes: Raw = _ABSENT
    output_dtypes: Raw = _ABSENT
    frames: Raw = _ABSENT
    time_discovered_started_ns: Raw = _ABSENT
    time_discovered_completed_ns: Raw = _ABSENT

    @property
    def group(self) -> str:
        return self.process_group[0]

    @property
    def op(self) -> str:
        """``nccl:all_reduce`` -> ``all_reduce``, ``nccl:send 0->1`` -> ``send``."""
        return split_name(self.profiling_name)[1]

    @property
    def done(self) -> bool:
        return is_done(self.retired, self.state)

    @property
    def timed_ms(self) -> float | None:
        """``duration_ms`` where torch wrote a number (NCCL/RCCL with timing on)."""
        return None if self.duration_ms is UNSET else self.duration_ms

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, _ABSENT)
        if type(value) is Raw:
            return msgspec.json.decode(value) if value else default
        return default if value is UNSET else value

    def __getitem__(self, key: str) -> Any:
        if key not in self:
            raise KeyError(key)
        return self.get(key)

    def __contains__(self, key: str) -> bool:
        value = getattr(self, key, _ABSENT)
        return not (type(value) is Raw and not value or value is UNSET)


def is_done(retired: Any, state: Any) -> bool:
    """An entry is done when retired or completed (the one rule, for dicts and structs)."""
    return bool(retired) or state == "completed"


_P2P_NAME = re.compile(r"^(send|recv)\s+(\d+)\s*(->|<-)\s*(\d+)$")


@functools.lru_cache(maxsize=4096)      # a buffer repeats a few names thousands of times
def split_name(profiling_name: str) -> tuple[str, str, int | None]:
    """(backend, op, peer in group-local ranks) from ``nccl:send 0->1`` and the like."""
    backend, _, name = profiling_name.partition(":")
    if not name:
        backend, name = "", backend
    match = _P2P_NAME.match(name.strip())
    if match:
        op, first, _, second = match.groups()
        return backend, op, int(second)     # send SRC->DST: DST; recv DST<-SRC: SRC
    return backend, name.strip().split(" ")[0], None


def group_ranks(ranks: Any) -> tuple[int, ...]:
    """A ``pg_config`` entry's ``ranks`` (the text JSON dumps hold, or a pickle's list) as a
    sorted tuple; () where it lists none or is not a list of numbers."""
    if isinstance(ranks, str):
        return _ranks_text(ranks)
    try:
        return tuple(sorted(int(r) for r in ranks))
    except (ValueError, TypeError):
        return ()


@functools.lru_cache(maxsize=64)
def _ranks_text(text: str) -> tuple[int, ...]:
    """Read once per process: every rank of a job repeats the world's list (16 384 numbers at
    16k ranks), and one tuple object is shared (also by the pickle that carries a worker's
    dumps back). A plain list of whole numbers is read as JSON (what literal_eval gives too,
    20x faster); anything else by literal_eval."""
    try:
        value = json.loads(text)
        if isinstance(value, list) and all(type(r) is int for r in value):
            return tuple(sorted(value))
    except (ValueError, RecursionError):
        pass
    try:
        return tuple(sorted(int(r) for r in ast.literal_eval(text)))
    except (ValueError, SyntaxError, TypeError):
        return ()
