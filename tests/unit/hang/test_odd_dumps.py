"""Odd dumps (fields missing, of other types, entries shuffled) end in a verdict or in one
bad-input line, never in a traceback."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from collscope.errors import UsageError
from collscope.hang import analyse_paths
from collscope.hang.dumps import load_pickle
from tests.conftest import fixture_path

FIELDS = ["collective_seq_id", "p2p_seq_id", "op_id", "process_group", "profiling_name",
          "input_sizes", "input_dtypes", "state", "retired", "record_id", "frames", "pg_id"]
ODD_VALUES = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=6),
                       st.lists(st.integers(0, 3), max_size=3), st.just({"x": 1}))


@settings(max_examples=60)
@given(rank=st.integers(0, 3), entry=st.integers(0, 8), field=st.sampled_from(FIELDS),
       value=ODD_VALUES, drop=st.booleans())
def test_a_mutated_field_never_raises_past_usage_error(tmp_path_factory, rank, entry, field,
                                                        value, drop):
    folder = tmp_path_factory.mktemp("odd")
    source = fixture_path("flight-recorder", "gloo_skip_4ranks")
    for r in range(4):
        dump = load_pickle((source / f"nccl_trace_rank_{r}").read_bytes())
        if r == rank and entry < len(dump["entries"]):
            if drop:
                dump["entries"][entry].pop(field, None)
            else:
                dump["entries"][entry][field] = value
        (folder / f"nccl_trace_rank_{r}").write_bytes(pickle.dumps(dump))
    try:
        verdict = analyse_paths([folder]).verdict
    except UsageError:
        return
    assert isinstance(verdict.culprit_ranks, list)


@settings(max_examples=60)
@given(rank=st.integers(0, 3), key=st.sampled_from(["pg_config", "pg_status", "version",
                                                     "entries", "rank"]),
       value=st.one_of(ODD_VALUES, st.just({"0": {"last_enqueued_collective": "x"}}),
                       st.just({"": {"ranks": "[0, 1"}}), st.just([{"a": 1}])))
def test_a_mutated_top_level_field_never_raises_past_usage_error(tmp_path_factory, rank, key,
                                                                  value):
    folder = tmp_path_factory.mktemp("odd")
    source = fixture_path("flight-recorder", "gloo_skip_4ranks")
    for r in range(4):
        dump = load_pickle((source / f"nccl_trace_rank_{r}").read_bytes())
        if r == rank:
            dump[key] = value
        (folder / f"nccl_trace_rank_{r}").write_bytes(pickle.dumps(dump))
    try:
        analyse_paths([folder])
    except UsageError:
        pass
