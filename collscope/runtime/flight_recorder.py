"""What PyTorch's Flight Recorder is called, and what it records, on each supported torch.

One place for the facts that changed across torch 2.5 to 2.15: the dump functions in
``torch._C._distributed_c10d``, the variables that size the ring buffer and name the dump
file, the backends that record, and whether the ring is on when its variable is unset.
``watch``, ``hang``, ``doctor`` and the docs ask here.

Checked on the wheels themselves (the names in their ``libtorch_*.so`` and
``dir(torch._C._distributed_c10d)``): 2.5.1, 2.6.0 and 2.7.1 (CUDA builds) have only
``_dump_nccl_trace`` / ``_dump_nccl_trace_json`` and TORCH_NCCL_TRACE_BUFFER_SIZE /
TORCH_NCCL_DEBUG_INFO_TEMP_FILE; 2.8.0 adds ``_dump_fr_trace`` / ``_dump_fr_trace_json`` and
TORCH_FR_BUFFER_SIZE / TORCH_FR_DUMP_TEMP_FILE, keeping the old functions and reading the old
variables as deprecated aliases; the 2.13.0 CPU wheel has only the new functions. Run here
(one gloo rank, an all_reduce, then the JSON dump): 2.5.1, 2.6.0, 2.7.1 have no gloo ring;
2.8.0 and 2.9.1 record it only with TORCH_FR_BUFFER_SIZE set; 2.13.0 and 2.15.0 with it unset.
NCCL's defaults, and gloo's for 2.10-2.12 (not run), come from torch's sources and pull
requests, named in each row's ``source``.
TORCH_NCCL_DUMP_ON_TIMEOUT (NCCL's watchdog writes the dumps) kept its name throughout.

Two ways to ask: :func:`release` is pure (a version string in, the table's row out: for docs
and doctor, which know a version but not the process), and :func:`probe` asks the running
torch what it offers by looking up the dump functions themselves (a build can lack NCCL: a
CPU wheel of torch 2.6 has no Flight Recorder at all, whatever its version says).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from collscope.versions import version_tuple

SUPPORTED = ((2, 5), (2, 15))       # oldest and newest torch minor collscope is tested on
PYTHONS = ((3, 10), (3, 13))

# Names torch has used. The NCCL-only ones came with the recorder (torch 2.2-2.4); the
# backend-neutral TORCH_FR_* ones replaced them in 2.8, which still reads the old ones as
# deprecated aliases (with a warning on the job's stderr when the old one is set).
NCCL_BUFFER = "TORCH_NCCL_TRACE_BUFFER_SIZE"
FR_BUFFER = "TORCH_FR_BUFFER_SIZE"
NCCL_DUMP_FILE = "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"
FR_DUMP_FILE = "TORCH_FR_DUMP_TEMP_FILE"
DUMP_ON_TIMEOUT = "TORCH_NCCL_DUMP_ON_TIMEOUT"
BUFFER_VARIABLES = (FR_BUFFER, NCCL_BUFFER)      # every name a torch may read, newest first
DEFAULT_ENTRIES = 2000          # torch's ring where it is on by default


@dataclass(frozen=True)
class Release:
    """The Flight Recorder of torch ``since`` .. ``until`` (minor versions, inclusive)."""

    since: tuple[int, int]
    until: tuple[int, int]
    backends: tuple[str, ...]        # process-group backends whose collectives it records
    dump_pickle: str                 # torch._C._distributed_c10d function: the pickle dump
    dump_json: str                   # ... and the JSON one
    buffer_variable: str             # the ring's size (entries); 0 switches it off
    buffer_aliases: tuple[str, ...]  # older names still read (deprecated)
    dump_file_variable: str          # prefix of the file each rank dumps to (+ rank)
    dump_file_aliases: tuple[str, ...]
    on_by_default: tuple[str, ...]   # backends that record with the buffer variable unset
    source: str                      # where the facts were read

    @property
    def dump_on_timeout_variable(self) -> str:
        return DUMP_ON_TIMEOUT

    def records(self, backend: str) -> bool:
        """Whether a process group of ``backend`` (nccl, gloo, 'cuda:nccl,cpu:gloo', ...)
        has its collectives in the ring; RCCL is torch's nccl backend on ROCm builds."""
        return any(name in self.backends for name in _backend_names(backend))

    def reads(self, variable: str) -> bool:
        return variable in (self.buffer_variable, *self.buffer_aliases)


def _nccl_only(since: tuple[int, int], until: tuple[int, int], on_by_default: tuple[str, ...],
               source: str) -> Release:
    return Release(since, until, ("nccl",), "_dump_nccl_trace", "_dump_nccl_trace_json",
                   NCCL_BUFFER, (), NCCL_DUMP_FILE, (), on_by_default, source)


def _every_backend(since: tuple[int, int], until: tuple[int, int],
                   on_by_default: tuple[str, ...], source: str) -> Release:
    return Release(since, until, ("nccl", "gloo"), "_dump_fr_trace", "_dump_fr_trace_json",
                   FR_BUFFER, (NCCL_BUFFER,), FR_DUMP_FILE, (NCCL_DUMP_FILE,), on_by_default,
                   source)


LATEST = (99, 0)         # the newest row holds for releases after the newest one checked
RELEASES: tuple[Release, ...] = (
    _nccl_only((2, 5), (2, 5), (), "NCCLTraceBuffer (TraceUtils.h): "
               "getCvarInt({TORCH_NCCL_TRACE_BUFFER_SIZE}, 0)"),
    _nccl_only((2, 6), (2, 7), ("nccl",), "pytorch#142260: NCCL's ring keeps 2000 entries "
               "unless the variable says otherwise"),
    _every_backend((2, 8), (2, 10), ("nccl",), "FlightRecorder.hpp: getCvarInt("
                   "{TORCH_FR_BUFFER_SIZE, TORCH_NCCL_TRACE_BUFFER_SIZE}, 0) for gloo; NCCL "
                   "keeps its 2000"),
    _every_backend((2, 11), LATEST, ("nccl", "gloo"), "pytorch#172843: one default of "
                   "2000 entries for every backend"),
)
_NEWEST_NAMES = RELEASES[-1]
_OLDEST_NAMES = RELEASES[0]


def minor_of(version: str | None) -> tuple[int, int] | None:
    """``'2.6.0+rocm6.2'`` -> (2, 6); None for anything without a major.minor."""
    found = version_tuple(version)
    return (found[0], found[1]) if found and len(found) >= 2 else None


def release(version: str | None) -> Release | None:
    """The table's row for a torch version; None before 2.5 or when the version is unknown
    (the Flight Recorder of torch 2.2-2.4 is outside the supported range)."""
    minor = minor_of(version)
    if minor is None:
        return None
    return next((r for r in RELEASES if r.since <= minor <= r.until), None)


def supported(version: str | None) -> bool:
    minor = minor_of(version)
    return minor is not None and SUPPORTED[0] <= minor <= SUPPORTED[1]


def _backend_names(backend: str) -> list[str]:
    """'cuda:nccl,cpu:gloo' -> ['nccl', 'gloo']; 'NCCL' -> ['nccl']."""
    return [part.rpartition(":")[2].strip().lower() for part in backend.split(",") if part]


@dataclass(frozen=True)
class Recorder:
    """What the running torch offers for one backend: the row that describes it, and the two
    dump functions, or why there is nothing to read (``missing``)."""

    torch_version: str
    release: Release | None
    dump_json: Callable[[], bytes] | None
    dump_pickle: Callable[[], bytes] | None
    missing: str = ""                # empty when the dumps are there and record the backend

    @property
    def available(self) -> bool:
        return not self.missing


def _running() -> tuple[Any, str] | str:
    """(torch._C._distributed_c10d, torch.__version__), or why torch.distributed is not
    there."""
    try:
        import torch
        from torch._C import _distributed_c10d
    except Exception as error:  # noqa: BLE001 (a broken torch is a missing recorder)
        return f"torch.distributed does not import ({type(error).__name__}: {error})"
    return _distributed_c10d, str(torch.__version__)


def running_release(c10d: Any = None, torch_version: str | None = None) -> Release | None:
    """The row whose dump functions the running torch (or the stand-in given) has, newest
    names first; by version number where it has neither (a build without NCCL before 2.8,
    which records nothing); None when torch.distributed does not import."""
    if c10d is None or torch_version is None:
        found = _running()
        if isinstance(found, str):
            return None
        c10d, torch_version = (c10d or found[0]), (torch_version or found[1])
    row = release(torch_version)
    for names in (_NEWEST_NAMES, _OLDEST_NAMES):
        if getattr(c10d, names.dump_json, None) is not None:
            return row if row is not None and row.dump_json == names.dump_json else \
                _nearest(names.dump_json)
    return row


def probe(backend: str, c10d: Any = None, torch_version: str | None = None) -> Recorder:
    """Ask the running torch (``torch._C._distributed_c10d`` unless a stand-in is given)
    which dump functions exist, newest names first, and whether they record ``backend``.

    Never raises: a torch without the C extension, or with neither name, is ``missing``."""
    if c10d is None or torch_version is None:
        found = _running()
        if isinstance(found, str):
            return Recorder("", None, None, None, found)
        c10d, torch_version = (c10d or found[0]), (torch_version or found[1])
    row = running_release(c10d, torch_version)
    dump_json = getattr(c10d, row.dump_json, None) if row is not None else None
    if row is None or dump_json is None:
        return Recorder(torch_version, row, None, None, (
            f"torch {torch_version} has no Flight Recorder dump in torch._C._distributed_c10d "
            f"(neither {_NEWEST_NAMES.dump_json} nor {_OLDEST_NAMES.dump_json}: a build "
            "without NCCL/RCCL before torch 2.8)"))
    if not row.records(backend):
        return Recorder(torch_version, row, None, None,
                        _not_recorded(torch_version, backend, row))
    return Recorder(torch_version, row, _json_caller(dump_json),
                    getattr(c10d, row.dump_pickle, None))


def _nearest(dump_json: str) -> Release:
    """A version outside the table with a known API: the newest row that names it."""
    return [r for r in RELEASES if r.dump_json == dump_json][-1]


def _json_caller(function: Callable[..., bytes]) -> Callable[[], bytes]:
    """The whole ring, collectives included, as JSON bytes (both names take the same
    keyword arguments)."""
    def dump() -> bytes:
        text = function(includeCollectives=True, onlyActive=False)
        return text.encode() if isinstance(text, str) else text
    return dump


def _not_recorded(version: str, backend: str, row: Release) -> str:
    first_gloo = next(r.since for r in RELEASES if "gloo" in r.backends)
    return (f"torch {version}'s Flight Recorder records {', '.join(row.backends)} only, not "
            f"{backend} (gloo from torch {first_gloo[0]}.{first_gloo[1]})")


def buffer_setting(environ: Mapping[str, str], row: Release | None) -> tuple[str | None,
                                                                           str | None]:
    """(variable, value) of the ring size as the running torch will read it: its own name
    first, then an alias it still reads; (None, None) when neither is set. Without a row
    (torch unknown) any known name counts."""
    names = (row.buffer_variable, *row.buffer_aliases) if row else BUFFER_VARIABLES
    for name in names:
        if environ.get(name):
            return name, environ[name]
    return None, None


def ignored_buffer_variables(environ: Mapping[str, str], row: Release | None) -> list[str]:
    """Buffer variables set in ``environ`` that this torch does not read (e.g.
    TORCH_FR_BUFFER_SIZE under torch 2.6)."""
    if row is None:
        return []
    return [n for n in BUFFER_VARIABLES if environ.get(n) and not row.reads(n)]


def switch_on(environ: Mapping[str, str], row: Release | None,
              entries: int) -> dict[str, str]:
    """The variable to add so the ring records: the one this torch reads, under its current
    name (so no deprecation warning reaches the job's output), with ``entries``, or with the
    value the user gave a name this torch ignores (TORCH_FR_BUFFER_SIZE under torch 2.6);
    nothing when the user set one it reads, or when the torch is unknown."""
    if row is None or buffer_setting(environ, row)[0] is not None:
        return {}
    ignored = ignored_buffer_variables(environ, row)
    return {row.buffer_variable: environ[ignored[0]] if ignored else str(entries)}


def ring_entries(environ: Mapping[str, str], row: Release | None, backend: str) -> int | None:
    """Entries the ring keeps for ``backend``: the variable's value as this torch reads it,
    else torch's default (DEFAULT_ENTRIES where it is on by default, 0 where not); None when
    the value is not a number or the torch is unknown."""
    if row is None:
        return None
    name, value = buffer_setting(environ, row)
    if name is None:
        on = any(b in row.on_by_default for b in _backend_names(backend))
        return DEFAULT_ENTRIES if on else 0
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def table_rows() -> list[dict[str, str]]:
    """The table as docs and ``doctor`` print it, one row per range of torch minors."""
    def span(r: Release) -> str:
        until = "" if r.until == LATEST else f"{r.until[0]}.{r.until[1]}"
        since = f"{r.since[0]}.{r.since[1]}"
        return since if until == since else f"{since}-{until}" if until else f"{since}+"
    return [{"torch": span(r), "records": ", ".join(r.backends),
             "dumps": f"{r.dump_pickle}, {r.dump_json}",
             "buffer": r.buffer_variable + (f" (also {', '.join(r.buffer_aliases)})"
                                            if r.buffer_aliases else ""),
             "dump file": r.dump_file_variable, "on when unset": ", ".join(r.on_by_default)
             or "none"} for r in RELEASES]
