"""The wrapper's side: records from the agents' folder read line by line (a half-written line
waits), kept in --json, counted into /metrics, and a straggler still flagged at the end of
the job closed with an 'ended' record."""

from __future__ import annotations

import json

from collscope.records.watch import AgentCostRecord, StragglerFinding, WatchWindowRecord
from collscope.watch.config import WatchConfig
from collscope.watch.run import Tail, Watch


class Kept:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def write(self, record: dict) -> None:
        self.records.append(record)


def test_tail_hands_over_complete_lines_only(tmp_path):
    tail = Tail(str(tmp_path))
    (tmp_path / "rank0.jsonl").write_text('{"kind": "a"}\n{"kind": "b"')
    assert tail.lines() == [{"kind": "a"}]
    with (tmp_path / "rank0.jsonl").open("a") as handle:
        handle.write('}\n')
    (tmp_path / "rank1.jsonl").write_text('{"kind": "c"}\n')
    assert tail.lines() == [{"kind": "b"}, {"kind": "c"}] and tail.lines() == []


def test_records_are_kept_counted_and_open_stragglers_closed(capsys):
    kept = Kept()
    watch = Watch(WatchConfig(command=["true"]), kept)
    window = WatchWindowRecord(1.0, 2, "node-1", 0, "0", 12, 31.0, 12, 900.0,
                               {"all_reduce": 50}, None, True).to_dict()
    finding = StragglerFinding("started", 1.0, 2, "node-1", 0, "0", 0.5, 31.0, 0.8, 900.0,
                               12, 12, 1e-6, 1e-4, "straggler: rank 2 (node-1) ...",
                               "test", "onset", [2], ["0"], [], None, "4 ranks",
                               310.0, 31.0).to_dict()
    for record in (window, finding, {"kind": "watch_dumped", "rank": 2, "time": 1.0}):
        watch.handle(json.loads(json.dumps(record)))
    assert 'collscope_watch_straggler{rank="2",host="node-1",group="0"} 1' in \
        watch.metrics.render()
    assert watch.live().endswith("stragglers: rank 2 (node-1) onset, 31.0 % of the job's time "
                                 "(binomial p=1e-06)")
    watch.finish()
    assert [(r["kind"], r.get("state")) for r in kept.records] == [
        ("watch_window", None), ("finding", "started"), ("finding", "ended")]
    assert "straggler ended with the job: rank 2 (node-1)" in capsys.readouterr().err


def test_each_ranks_agent_cost_is_kept_and_summed_up_at_the_end(capsys):
    kept = Kept()
    watch = Watch(WatchConfig(command=["true"]), kept)
    for rank, cpu_s in ((0, 0.06), (1, 0.01), (2, 0.02), (3, 0.03)):
        watch.handle(AgentCostRecord(9.0, rank, "node-0", 0.5, cpu_s, 20.0, cpu_s / 20.0, 20,
                                     cpu_s / 2, 1.0, 0).to_dict())
    watch.finish()
    assert [r["kind"] for r in kept.records] == ["watch_agent"] * 4
    err = capsys.readouterr().err
    # median of 0.05 %, 0.10 %, 0.15 %, 0.30 % of a core; the most is rank 0's aggregator
    assert "agent cost: median 0.12 % of a core per rank (1.2 ms CPU per s, 4 rank(s)" in err
    assert "most: rank 0 (node-0) 0.30 % (the aggregator)" in err


def test_an_nccl_job_without_durations_is_told_how_to_get_busbw(capsys):
    for busbw, said in ((None, True), ({"all_reduce": 150.0}, False)):
        watch = Watch(WatchConfig(command=["true"]), Kept())
        watch.handle({"kind": "watch_job", "time": 1.0, "world_size": 2, "backend": "nccl",
                      "ranks": [], "hosts": [], "clock": {"reason": "one host"},
                      "flight_recorder": {"variable": None, "entries": None}})
        window = WatchWindowRecord(1.0, 1, "node-0", 1, "0", 12, 0.1, 0, 0.0,
                                   {"all_reduce": 50}, None, False).to_dict()
        window["busbw_gbs"] = busbw
        watch.handle(window)
        watch.finish()
        err = capsys.readouterr().err
        assert ("TORCH_NCCL_ENABLE_TIMING=1" in err) is said


def test_a_job_without_a_ring_is_said_once_and_its_stall_judged_from_stacks(tmp_path, capsys):
    """gloo on torch 2.6: rank 0's watch_job says there is no Flight Recorder (one line for
    the job, with what is lost); the stall is then judged from the dumped stacks."""
    kept = Kept()
    watch = Watch(WatchConfig(command=["true"], hang_after_s=10), kept)
    fr = {"variable": "TORCH_NCCL_TRACE_BUFFER_SIZE", "entries": "256", "set_by": "collscope",
          "ignored": [], "torch": "2.6.0", "dump": "_dump_nccl_trace_json",
          "reads": "main_thread", "why": "torch 2.6.0's Flight Recorder records nccl only, not "
                                         "gloo (gloo from torch 2.8)"}
    watch.handle({"kind": "watch_job", "time": 1.0, "world_size": 2, "backend": "gloo",
                  "ranks": [{"rank": 0, "host": "node-0"}, {"rank": 1, "host": "node-1"}],
                  "hosts": ["node-0", "node-1"], "clock": {"reason": "one host"},
                  "flight_recorder": fr})
    err = capsys.readouterr().err
    assert err.count("no Flight Recorder for this job") == 1
    assert "records nccl only, not gloo" in err and "Lost: straggler windows" in err
    frames = [{"filename": "train.py", "name": "<module>", "line": 20}]
    c10d = {"filename": "/sp/torch/distributed/distributed_c10d.py", "name": "all_reduce",
            "line": 2800}
    for rank, stack in ((0, frames + [c10d]), (1, frames)):
        (tmp_path / f"stack_rank_{rank}.json").write_text(json.dumps(
            {"kind": "main_thread_stack", "rank": rank, "frames": stack}))
    watch.handle({"kind": "watch_stall", "time": 2.0, "detected_by": 0, "group": "",
                  "collective": "all_reduce", "seq": -1, "pending_s": 10.5,
                  "dump_dir": str(tmp_path), "answered": [0, 1], "no_answer": []})
    err = capsys.readouterr().err
    assert "stall: rank 0's main thread in all_reduce pending 10.5 s" in err
    assert "HANG: rank 1 (node-1)'s main thread is not in a collective (at train.py:20 in " \
           "<module>). Rank(s) 0 wait in all_reduce at train.py:20 in <module> on it" in err
    assert [r["kind"] for r in kept.records] == ["watch_job", "watch_stall",
                                                 "watch_stack_verdict"]
    assert kept.records[-1]["culprit_ranks"] == [1]


def test_a_buffer_variable_the_torch_ignores_is_said(capsys):
    watch = Watch(WatchConfig(command=["true"]), Kept())
    watch.flight_recorder({"variable": "TORCH_NCCL_TRACE_BUFFER_SIZE", "entries": "5000",
                           "ignored": ["TORCH_FR_BUFFER_SIZE"], "torch": "2.6.0",
                           "reads": "flight_recorder"})
    assert "torch 2.6.0 does not read TORCH_FR_BUFFER_SIZE; it reads " \
           "TORCH_NCCL_TRACE_BUFFER_SIZE=5000" in capsys.readouterr().err
