"""Real profiler traces (tests/fixtures/traces). Expected values were
derived from the raw events with a few lines of json/gzip (kernel names, kernel args, the
nccl:* annotations, a sweep over kernel boundaries), not with collscope."""

from __future__ import annotations

from collections import Counter

import pytest

from collscope.trace.events import load_trace
from collscope.trace.rank import analyse_doc
from tests.conftest import fixture_path


def analyse(name: str, steps=None):
    path = fixture_path("traces", name)
    return analyse_doc(load_trace(path), str(path), None, steps)


def by_collective(trace):
    return Counter(c.collective for c in trace.calls)


def test_nccl_a100_kernel_args_give_collective_sizes_and_algorithm():
    trace = analyse("HolisticTraceAnalysis__nccl_data_rank0of2.json.gz")
    assert (trace.rank, trace.world_size, trace.timing) == (0, 2, "gpu kernels")
    assert by_collective(trace) == {"all_reduce": 15, "broadcast": 6}
    reduces = [c for c in trace.calls if c.collective == "all_reduce"]
    # "In msg nelems" x 4 bytes (float), as the kernels' args give them.
    assert {c.size_bytes for c in reduces} == {8196000, 9724160, 26255360, 26550272, 31502336}
    assert sum(c.dur_us for c in reduces) == pytest.approx(46762.159, abs=1e-3)
    assert {(c.algorithm, c.protocol, c.dtype, c.group_size) for c in reduces} == {
        ("RING", "LL", "float", 2)}
    broadcasts = Counter((c.dtype, c.size_bytes) for c in trace.calls
                         if c.collective == "broadcast")
    assert broadcasts == {("float", 53120 * 4): 3, ("int64", 53 * 8): 3}


def test_mi300x_rccl_generic_kernels_take_the_collective_from_args_and_record_param_comms():
    trace = analyse("TraceLens__mi300x_resnet_act_checkpoint_rank0of8.json.gz")
    assert (trace.rank, trace.world_size) == (0, 8)
    # 17 ncclDevKernel_Generic kernels: 12 carry args; 5 have no launch and no args.
    assert by_collective(trace) == {"all_reduce": 6, "broadcast": 6, "unknown": 5}
    reduces = [c for c in trace.calls if c.collective == "all_reduce"]
    assert Counter(c.size_bytes for c in reduces) == {2873320 * 2: 3, 8816192 * 2: 3}
    assert {c.dtype for c in reduces} == {"bfloat16"}
    assert sum(c.dur_us for c in reduces) == pytest.approx(47137.038, abs=1e-3)


def test_old_traces_name_collectives_by_their_nccl_annotations():
    trace = analyse("HolisticTraceAnalysis__trace_diff_control_rank3of8.json.gz")
    # 42 SendRecv kernels under nccl:all_to_all, 18 AllReduce kernels under nccl:all_reduce.
    assert by_collective(trace) == {"alltoall": 42, "all_reduce": 18}
    assert sum(c.dur_us for c in trace.calls) == pytest.approx(163535)
    negqueue = analyse("HolisticTraceAnalysis__negqueue_rank0of16.json.gz")
    # c10d ops around the launches; 5 SendRecv kernels have no launch event in the trace.
    assert by_collective(negqueue) == {"alltoall": 45, "reduce_scatter": 10, "all_reduce": 10,
                                       "all_gather": 10, "sendrecv": 5}
    assert sum(c.dur_us for c in negqueue.calls) == pytest.approx(190345)
    resolver = analyse("HolisticTraceAnalysis__df_index_resolver_rank1of2.json.gz")
    assert by_collective(resolver) == {"all_reduce": 2020}
    assert sum(c.dur_us for c in resolver.calls) == pytest.approx(357343)
    assert resolver.rank == 1 and resolver.overlap_percent == 0.0


def test_overlap_and_exposed_comm_of_one_step_window():
    """ProfilerStep#1011 of the 8-rank trace: kernels launched inside it; comm 31488 us of
    which 17004 us overlap compute (boundary sweep over the raw kernels)."""
    trace = analyse("HolisticTraceAnalysis__trace_diff_control_rank3of8.json.gz", (1011, 1012))
    assert [s.step for s in trace.steps] == [1011]
    step = trace.steps[0]
    assert step.comm_ms == pytest.approx(31.488)
    assert step.exposed_comm_ms == pytest.approx(14.484)
    assert step.overlap_percent == pytest.approx(100 * 17004 / 31488)
    assert step.step_ms == pytest.approx(76.212)
    assert trace.overlap_percent == pytest.approx(step.overlap_percent)
    assert sum(1 for c in trace.calls if c.step == 1011) == 10


@pytest.mark.parametrize("name, overlap", [
    # HTA's window (kernels launched before the last ProfilerStep), computed independently.
    ("HolisticTraceAnalysis__nccl_data_rank0of2.json.gz", 14.76),
    ("HolisticTraceAnalysis__negqueue_rank0of16.json.gz", 1.37),
    ("HolisticTraceAnalysis__sampled_rank-0of128.json.gz", 11.81),
    ("HolisticTraceAnalysis__sampled_rank-1of128.json.gz", 20.05),
    ("HolisticTraceAnalysis__trace_diff_control_rank3of8.json.gz", 47.03),
    ("TraceLens__mi300x_resnet_act_checkpoint_rank0of8.json.gz", 24.97),
])
def test_rank_overlap_over_the_hta_window(name, overlap):
    assert analyse(name).overlap_percent == pytest.approx(overlap, abs=0.005)


def test_world_size_one_has_no_communication():
    trace = analyse("HolisticTraceAnalysis__ns_resolution_rank0of1.pt.trace.json.gz")
    assert trace.world_size == 1 and trace.calls == [] and trace.overlap_percent is None
    assert len(trace.steps) == 4 and trace.comm_ms == 0


def test_worker_processes_give_the_same_analysis():
    from collscope.trace.analyze import read_ranks

    files = [fixture_path("traces", f"HolisticTraceAnalysis__sampled_rank-{r}of128.json.gz")
             for r in (0, 1)]
    serial, parallel = read_ranks(files, None, workers=1), read_ranks(files, None, workers=2)
    assert [t.rank for t in parallel] == [0, 1]
    assert [(t.overlap_percent, len(t.calls)) for t in parallel] == [
        (t.overlap_percent, len(t.calls)) for t in serial]


def test_odd_events_are_skipped_not_fatal():
    import json
    from pathlib import Path

    from collscope.trace.events import parse_trace

    events = [
        {"ph": "X", "name": "ProfilerStep#x", "cat": "user_annotation", "ts": 0, "dur": 5},
        {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "ts": 0, "dur": 100},
        {"ph": "X", "name": "ProfilerStep#2", "cat": "user_annotation", "ts": 100, "dur": 100},
        {"ph": "X", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "cat": "kernel",
         "ts": "soon", "dur": 3},                                   # non-numeric time
        {"ph": "X", "cat": "kernel", "ts": 1, "dur": 3},           # no name
        {"ph": "X", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "cat": "kernel",
         "ts": 10, "dur": 20, "args": {"correlation": "7", "stream": "x"}},
        {"ph": "X", "name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts": 5, "dur": 1,
         "args": {"correlation": 7}},
        {"ph": "X", "name": "sgemm", "cat": "kernel", "ts": 15, "dur": 10},   # no launch
        {"ph": "i", "name": "marker", "ts": 3},
        {"ph": "X", "name": "record_param_comms", "cat": "cpu_op", "ts": 4, "dur": 2,
         "args": {"In msg nelems": "many", "Group size": 2.5, "dtype": 7}},
    ]
    doc = parse_trace(json.dumps({"traceEvents": events}).encode(), Path("odd.json"))
    trace = analyse_doc(doc, "odd.json", 3)
    assert trace.rank == 3 and [s.step for s in trace.steps] == [1]
    assert [(c.collective, c.size_bytes, c.step) for c in trace.calls] == [
        ("all_reduce", None, 1)]
    assert trace.comm_ms == pytest.approx(0.02) and trace.overlap_percent == 0.0


def test_random_events_never_crash_the_analysis():
    import json
    from pathlib import Path

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from collscope.trace.events import parse_trace

    value = st.one_of(st.none(), st.integers(-5, 500), st.floats(-5, 500, allow_nan=False),
                      st.text(max_size=4), st.lists(st.integers(0, 9), max_size=3))
    names = st.sampled_from(["ProfilerStep#1", "ProfilerStep#2", "record_param_comms",
                             "nccl:all_reduce", "gloo:all_reduce", "c10d::allreduce_",
                             "ncclDevKernel_Generic", "ncclKernel_AllReduce_RING_LL_Sum_float",
                             "sgemm", "Memcpy DtoD", "cudaLaunchKernel"])
    keys = st.sampled_from(["correlation", "stream", "Collective name", "In msg nelems",
                            "Out msg nelems", "dtype", "Group size", "Process Group Name",
                            "Seq", "Input Dims", "Input type"])
    event = st.fixed_dictionaries(
        {"ph": st.sampled_from(["X", "i", "s"]), "name": names, "ts": value, "dur": value},
        optional={"cat": st.sampled_from(["kernel", "cpu_op", "user_annotation",
                                          "cuda_runtime", "gpu_memcpy"]),
                  "args": st.dictionaries(keys, value, max_size=4)})

    @settings(max_examples=60, deadline=None)
    @given(st.lists(event, max_size=25))
    def check(events):
        doc = parse_trace(json.dumps({"traceEvents": events}).encode(), Path("fuzz.json"))
        trace = analyse_doc(doc, "fuzz.json", 0)
        assert trace.comm_ms >= 0 and trace.exposed_comm_ms >= -1e-9

    check()


def test_the_ranks_calls_cover_the_window_of_its_figures():
    """6 ProfilerSteps (#1009..#1014) of 10 collective kernels each: the default window (before
    the last step, as HTA) holds 50 of the 60 calls, one selected step 10."""
    from collscope.trace.analyze import TraceResult
    from collscope.trace.table import rank_window_calls

    trace = analyse("HolisticTraceAnalysis__trace_diff_control_rank3of8.json.gz")
    assert len(trace.calls) == 60 and len(rank_window_calls(trace)) == 50
    assert {c.step for c in trace.calls if not c.in_window} == {None}       # step #1014
    (record,) = TraceResult([trace], [], None, [], None).rank_records()
    assert record.calls == 50 and record.window == trace.window
    one = analyse("HolisticTraceAnalysis__trace_diff_control_rank3of8.json.gz", (1011, 1012))
    assert len(rank_window_calls(one)) == 10 and {c.step for c in rank_window_calls(one)} == {1011}
