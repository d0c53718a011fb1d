"""The stall watch where no Flight Recorder records the backend: a thread seen blocked in a
collective (files laid out as torch's: tests/unit/watch/fake_torch), aged from its first
sighting, a new call never taken for the old one; and the verdict from the ranks' stacks."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from pathlib import Path

from collscope.watch import stacks
from collscope.watch.waits import DDP_MODULE, MainThreadReader, wait_site

FAKE = Path(__file__).parent / "fake_torch" / "torch"


def _load(relative: str):
    spec = importlib.util.spec_from_file_location(f"fake_{relative}", FAKE / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


c10d = _load("distributed/distributed_c10d.py")
graph = _load("autograd/graph.py")


def user_step(release: threading.Lock) -> None:        # the "training script"
    c10d.all_reduce([1.0], release)


class Blocked:
    """A thread of its own in a call that blocks (in C, on a held lock) until released."""

    def __init__(self, target, *args) -> None:
        self.release = threading.Lock()
        self.release.acquire()
        self.thread = threading.Thread(target=target, args=(*args, self.release), daemon=True)
        self.thread.start()
        time.sleep(0.05)

    def end(self) -> None:
        self.release.release()
        self.thread.join(5)


def test_a_thread_blocked_in_a_collective_ages_from_its_first_sighting():
    now = [10_000_000_000]
    job = Blocked(user_step)
    reader = MainThreadReader("gloo", job.thread.ident, clock_ns=lambda: now[0])
    first = reader.read().oldest_pending
    assert first.op == "all_reduce" and first.profiling_name == "gloo:all_reduce"
    assert not first.done and first.collective_seq_id == -1
    now[0] += 7_000_000_000
    again = reader.read()
    assert again.oldest_pending.time_created_ns == 10_000_000_000      # the same call
    assert again.new == [] and again.pending_ids == {first.record_id}
    job.end()
    assert reader.read().oldest_pending is None                         # the thread is gone
    later = Blocked(user_step)                                          # a new call: a new age
    reader.thread_id = later.thread.ident
    assert reader.read().oldest_pending.time_created_ns == now[0]
    later.end()


def test_a_thread_elsewhere_is_not_waiting():
    job = Blocked(lambda release: release.acquire())
    assert MainThreadReader("gloo", job.thread.ident).read().oldest_pending is None
    job.end()


def test_backward_is_a_wait_only_in_a_process_with_ddp(monkeypatch):
    job = Blocked(graph._engine_run_backward)
    monkeypatch.delitem(sys.modules, DDP_MODULE, raising=False)
    assert MainThreadReader("gloo", job.thread.ident).read().oldest_pending is None
    monkeypatch.setitem(sys.modules, DDP_MODULE, sys)
    assert MainThreadReader("gloo", job.thread.ident).read().oldest_pending.op == "backward"
    job.end()


SITE = "/venv/lib/python3.11/site-packages/torch"


def _stack(rank: int, innermost: list[tuple[str, str, int]], ddp: bool = False) -> dict:
    frames = [("train.py", "<module>", 40), ("train.py", "step", 28), *reversed(innermost)]
    return {"kind": "main_thread_stack", "rank": rank, "ddp": ddp,
            "frames": [{"filename": f, "name": n, "line": li} for f, n, li in frames]}


IN_ALL_REDUCE = [(f"{SITE}/distributed/distributed_c10d.py", "all_reduce", 2800),
                 (f"{SITE}/distributed/c10d_logger.py", "wrapper", 81)]
IN_BACKWARD = [(f"{SITE}/autograd/graph.py", "_engine_run_backward", 823),
               (f"{SITE}/autograd/__init__.py", "backward", 347),
               (f"{SITE}/_tensor.py", "backward", 626)]
SLEEPING = [("train.py", "load_batch", 12)]


def test_wait_site_names_the_collective_the_caller_called_and_where():
    site = wait_site([(f, n, li) for f, n, li in IN_ALL_REDUCE] + [("train.py", "step", 28)],
                     ddp=False)
    assert (site.collective, site.caller) == ("all_reduce", "train.py:28 in step")
    backward = IN_BACKWARD + [("train.py", "step", 28)]
    assert wait_site(backward, ddp=False) is None
    assert wait_site(backward, ddp=True).caller == "train.py:28 in step"   # past _tensor.py
    assert wait_site(SLEEPING, ddp=True) is None and wait_site([], ddp=True) is None


def test_the_rank_outside_any_collective_is_named():
    verdict = stacks.judge([_stack(0, IN_ALL_REDUCE), _stack(1, SLEEPING),
                            _stack(2, IN_ALL_REDUCE)], [3], {1: "node-1"})
    assert verdict.culprit_ranks == [1, 3]
    assert verdict.waiting == {"all_reduce at train.py:28 in step": [0, 2]}
    assert verdict.elsewhere == {"1": "train.py:12 in load_batch"}
    assert verdict.title.startswith("HANG: rank 1 (node-1)'s main thread is not in a "
                                    "collective (at train.py:12 in load_batch); rank(s) 3 "
                                    "wrote no stack")
    assert verdict.title.endswith("Rank(s) 0, 2 wait in all_reduce at train.py:28 in step "
                                  "on it")
    assert verdict.to_dict()["kind"] == "watch_stack_verdict"


def test_ddp_ranks_waiting_in_backward_and_nobody_outside():
    waiting = [_stack(r, IN_BACKWARD, ddp=True) for r in range(3)]
    verdict = stacks.judge(waiting, [])
    assert verdict.culprit_ranks == [] and "every rank waits in the same collective" in \
        verdict.title
    split = stacks.judge([_stack(0, IN_BACKWARD, ddp=True), _stack(1, IN_ALL_REDUCE)], [])
    assert "wait in different collectives" in split.title


def test_stacks_are_read_from_the_dump_folder(tmp_path):
    import json

    (tmp_path / "stack_rank_0.json").write_text(json.dumps(_stack(0, SLEEPING)))
    (tmp_path / "stack_rank_1.json").write_text("{not json")
    (tmp_path / "no_answer.json").write_text(json.dumps({"kind": "no_answer", "ranks": [2]}))
    found, silent = stacks.read_folder(str(tmp_path))
    assert [s["rank"] for s in found] == [0] and silent == [2]
