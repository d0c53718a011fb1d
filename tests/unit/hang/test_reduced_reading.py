"""Dumps read reduced (hang/reduce.py) give the verdict, text and records the whole dumps give,
on odd dumps too: fields mutated, numbers shifted so that a rank is far ahead (its entry at
the stuck number was left out and it is read again whole), entries shuffled."""

from __future__ import annotations

import json
import pickle
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from collscope.errors import UsageError
from collscope.hang import analyse_paths, analysis_records, render_text
from collscope.hang.dumps import load_pickle
from collscope.hang.typed_json import typed_dump
from tests.conftest import fixture_path

FOLDERS = ["gloo_skip_4ranks", "gloo_p2p_4ranks", "gloo_dead_4ranks", "nvrx_gpu_error_2nd"]
FIELDS = ["collective_seq_id", "p2p_seq_id", "op_id", "process_group", "profiling_name",
          "state", "retired", "record_id", "pg_id"]
FORMS = ["pickle", "json"]
VALUES = st.one_of(st.none(), st.integers(-3, 90000), st.text(max_size=4), st.booleans(),
                   st.floats(-3, 90000), st.just(["nccl:all_reduce"]),
                   st.just(("0", "default_pg")), st.just("nccl:send 0->1"))


def _outcome(folder, **reading) -> str:
    try:
        analysis = analyse_paths([folder], **reading)
    except UsageError as error:
        return f"usage error: {error}"
    return render_text(analysis) + "".join(json.dumps(r, sort_keys=True) + "\n"
                                           for r in analysis_records(analysis))


def _write(folder, source: str, change, form: str = "pickle") -> None:
    """The fixture's dumps changed, as pickles or as JSON (read by typed_json when reduced)."""
    for path in sorted(fixture_path("flight-recorder", source).iterdir()):
        if path.name.endswith(".log"):
            continue
        dump = load_pickle(path.read_bytes())
        change(path.name, dump)
        if form == "json":
            (folder / f"{path.name}.json").write_text(json.dumps(dump))
        else:
            (folder / path.name).write_bytes(pickle.dumps(dump))


@settings(max_examples=40, deadline=None)
@given(source=st.sampled_from(FOLDERS), victim=st.integers(0, 15), entry=st.integers(0, 10),
       field=st.sampled_from(FIELDS), value=VALUES, form=st.sampled_from(FORMS))
def test_a_mutated_entry_gives_the_same_outcome_reduced_and_whole(tmp_path_factory, source,
                                                                  victim, entry, field, value,
                                                                  form):
    folder = tmp_path_factory.mktemp("odd")

    def change(name, dump):
        entries = dump.get("entries") or []
        if name.endswith(f"_{victim}") and entry < len(entries):
            entries[entry][field] = value
    _write(folder, source, change, form)
    assert _outcome(folder) == _outcome(folder, reduce=False)


@settings(max_examples=25, deadline=None)
@given(source=st.sampled_from(FOLDERS), victim=st.integers(0, 15), shift=st.integers(-6, 6),
       shuffle=st.booleans(), form=st.sampled_from(FORMS))
def test_a_rank_ahead_or_behind_gives_the_same_outcome_reduced_and_whole(
        tmp_path_factory, source, victim, shift, shuffle, form):
    folder = tmp_path_factory.mktemp("ahead")

    def change(name, dump):
        if not name.endswith(f"_{victim}"):
            return
        for raw in dump.get("entries") or []:
            raw["collective_seq_id"] += shift
            raw["op_id"] += shift
        for status in (dump.get("pg_status") or {}).values():
            status["last_enqueued_collective"] += shift
            status["last_completed_collective"] += shift
        if shuffle:
            random.Random(shift).shuffle(dump["entries"])
    _write(folder, source, change, form)
    assert _outcome(folder) == _outcome(folder, reduce=False)


def test_a_rank_far_ahead_is_read_again_whole(tmp_path):
    # Rank 0 of gloo_skip completed #1-#8 and issued #9; with its buffer extended by 20
    # completed numbers the others' stuck #9 lies far below its kept window.
    def change(name, dump):
        if name.endswith("_0"):
            last = dump["entries"][-1]
            dump["entries"][-1] = {**last, "retired": True}
            for i in range(1, 21):
                dump["entries"].append({**last, "record_id": last["record_id"] + i,
                                        "collective_seq_id": 9 + i, "op_id": last["op_id"] + i,
                                        "retired": i < 20})
            dump["pg_status"] = {}
    _write(tmp_path, "gloo_skip_4ranks", change)
    analysis = analyse_paths([tmp_path])
    assert analysis.verdict.culprit_ranks == [2]
    assert not analysis.dumps[0].dropped          # read again whole
    assert _outcome(tmp_path) == _outcome(tmp_path, reduce=False)


def test_a_typed_json_entry_reads_as_its_dict_does():
    # Every field the analysis reads, on every entry of the real JSON dumps: the same value,
    # and present or not alike (missing_fields asks "duration_ms" in entry).
    wanted = [*FIELDS, "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "frames",
              "time_created_ns", "time_discovered_started_ns", "duration_ms", "thread_name"]
    read = 0
    for path in sorted(fixture_path("flight-recorder").glob("*/*.json")):
        typed = typed_dump(path.read_bytes())
        whole = json.loads(path.read_text())
        assert typed is not None, path
        assert {k: v for k, v in typed.items() if k != "entries"} == \
            {k: whole[k] for k in typed if k != "entries"}
        for mine, theirs in zip(typed.get("entries") or [], whole.get("entries") or [],
                                strict=True):
            for key in wanted:
                if key != "thread_name":
                    assert (key in mine) == (key in theirs), (path, key)
                    assert list_like(mine.get(key)) == theirs.get(key), (path, key)
                else:
                    assert key not in mine       # not read, so not decoded
            read += 1
    assert read > 100


def list_like(value):
    return list(value) if isinstance(value, tuple) else value


def test_a_document_typed_json_does_not_fit_is_left_to_the_generic_reader():
    assert typed_dump(b'{"kind": "main_thread_stack", "version": "1", "rank": 0}') is None
    assert typed_dump(b'{"version": "2.10", "entries": [{"record_id": "7"}]}') is None
    assert typed_dump(b'[1, 2]') is None
    assert typed_dump(b'{"entries": []}') is None                  # no version: not a dump
    assert typed_dump(b'{"version": "2.10", "entries": null}') == {"version": "2.10",
                                                                    "entries": None}
