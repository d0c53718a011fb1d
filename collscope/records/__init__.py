"""The records layer: every record kind collscope writes, its one JSON Lines reader and
writer, and the one input loader.

Convention: ``--json FILE`` (``-`` for stdout) writes JSON Lines, one object per line, each
with a ``kind``; a measuring command writes its ``run`` record first, then one record per
measurement, flushed as it exists (a crash loses nothing written). Field names and units are
public interface: change them only together with ``SCHEMA_VERSION`` (records.run). Units are
in the names: ``_us`` microseconds, ``_ms`` milliseconds, ``_gbs`` GB/s with GB = 1e9 bytes,
``_bytes`` bytes, ``_per_s`` per second.

One module per family of kinds:

- ``run``: ``run`` (every output's first record), ``SCHEMA_VERSION``, the recorded environment
- ``bench``: ``result``;  ``train``: ``train``, ``overlap``
- ``model``: ``prediction``, ``model_fit``, ``model_group``, ``check``, ``check_band``,
  ``check_row``, ``plan``, ``plan_row``
- ``sample``: monitor's ``sample`` and its flat metric names
- ``trace``: ``trace_collective``, ``trace_step``, ``trace_rank``;  ``finding``: ``finding``
- ``links``: ``link``, ``link_try``, ``node``, ``links_summary``
- ``tune``: ``tune_trial``, ``tune``
- ``hang``: ``hang_group``, ``hang_verdict``
- ``watch``: ``watch_job``, ``watch_window``, ``watch_stall`` (its straggler is a ``finding``)
- ``doctor``: ``doctor_finding``, ``doctor_node``

and the machinery:

- ``jsonl``: the JsonlWriter (flushed per record), ``write_records``, ``parse_jsonl`` (every
  line that is not an object said by its number), bench's CSV writer, output checks
- ``base``: the Record class every kind is; ``kinds``: the kinds, from the classes
- ``load``: an input file (collscope JSON Lines, or a log through ``logs``) as runs
- ``logs``: nccl-tests / rccl-tests text logs and JSON as run and result records

Every kind is one ``msgspec.Struct`` tagged by its kind (``class X(Record, tag="x")``,
records.base), used by the writers (``X(...).to_dict()``, through ``jsonl.JsonlWriter`` or
``write_records``) and by the reader (``load``, which reads each record back as its class).
The class says where its records join a run when read (``joins``: a field of ``load.Run``)
and where ``kind`` stands in the written object (``kind_before``); ``kinds`` lists the kinds
from the classes. A new kind is a class in its family's module (and a row in
docs/records.md); a new family is a module here and a name in ``kinds.FAMILIES``.
"""
